//! Local history and accountability: the SQLite journal and the hash-chained audit log.

pub mod audit;
pub mod journal;
pub mod private_file;
