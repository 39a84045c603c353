//! The soak of `tests/soak/main.rs`: the emulator in a child process ([`child`]), the comparison
//! with the engine ([`compare`]), process figures from `/proc` ([`procfs`]) and the driver
//! ([`driver`]).

pub mod child;
pub mod compare;
pub mod driver;
pub mod procfs;
