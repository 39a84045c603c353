//! The AWS Batch client (the only crate that touches AWS SDK types) and the poller.

pub mod batch;
pub mod poll;
