//! The local wall clock, read in one place for every layer.

use std::time::{SystemTime, UNIX_EPOCH};

use super::Millis;

/// The local wall clock in epoch milliseconds (0 should the clock read before 1970).
pub fn wall_clock_ms() -> Millis {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
        Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_a_time_after_2020() {
        assert!(super::wall_clock_ms() > 1_577_836_800_000);
    }
}
