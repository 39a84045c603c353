//! History and accountability: the journal (SQLite, or PostgreSQL for a team) and the
//! hash-chained audit log.

pub mod audit;
mod db;
pub mod journal;
mod lead;
mod location;
pub mod pg;
pub mod private_file;
mod tls;

pub use lead::{Fence, LEAD_CHECK, LEASE, LEASE_RENEW, Lead, Role};
pub use location::StoreLocation;
pub use tls::{SslMode, TlsError};
