//! The soak of `tests/soak.rs`: the emulator in a child process ([`child`]), the comparison
//! with the engine ([`compare`]), process figures from `/proc` ([`procfs`]) and the driver
//! ([`driver`]).
#![allow(dead_code)]

pub mod child;
pub mod compare;
pub mod driver;
pub mod procfs;
