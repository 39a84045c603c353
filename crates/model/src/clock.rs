//! The local wall clock, read in one place for every layer.

use std::time::{SystemTime, UNIX_EPOCH};

use super::Millis;

/// The local wall clock in epoch milliseconds (0 should the clock read before 1970).
pub fn wall_clock_ms() -> Millis {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
        Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX)
    })
}

/// Epoch ms as an RFC 3339 UTC time to the second (`2026-11-30T12:00:00Z`), or the raw
/// number when it is out of chrono's range.
pub fn format_utc(ms: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || format!("{ms} ms"),
        |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_a_time_after_2020() {
        assert!(super::wall_clock_ms() > 1_577_836_800_000);
    }

    #[test]
    fn formats_utc_and_survives_out_of_range() {
        assert_eq!(super::format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::format_utc(i64::MAX), format!("{} ms", i64::MAX));
    }
}
