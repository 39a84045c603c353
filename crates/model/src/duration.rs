//! Durations as people type them: `90s`, `1.5s`, `15m`, `12h`, `7d`, `2w`, `50ms` (or plain
//! milliseconds), and the one range check for seconds read from trace, config and scenario
//! files. [`parse_duration`] is the one duration parser: `--since`, the report windows and the
//! emulator's fault latencies all read durations through it.

use super::Millis;

/// A duration as quotatop writes it wherever a person reads one (console, reports, replay,
/// snapshot tables, drill): the largest two units, `45s`, `3m12s`, `2h05m`, `3d04h`, in the
/// units [`parse_duration`] reads. Negative durations are written as `0s`; a signed difference
/// writes its sign itself.
pub fn format_duration(ms: Millis) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// [`format_duration`], or `-` when the duration is unknown.
pub fn format_duration_opt(ms: Option<Millis>) -> String {
    ms.map_or_else(|| "-".to_string(), format_duration)
}

/// The longest duration or trace time quotatop takes from a file: 100 years (36,525 days).
/// Anything longer is a typo or a unit mix-up, and far inside what [`Millis`] holds, so sums
/// and products of a few such values cannot overflow.
pub const MAX_INPUT_MS: Millis = 36_525 * 86_400_000;

/// Why a number of seconds was refused; the message follows the value it is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SecondsError {
    #[error("is not a finite number")]
    NotFinite,
    #[error("is negative")]
    Negative,
    #[error("is beyond 100 years")]
    BeyondLimit,
}

/// A duration, a number of seconds or a point in time that was refused. The message quotes
/// the value; the caller adds where it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("{0:?} is not a number of seconds")]
    NotSeconds(String),
    #[error("{text:?} {why}")]
    Seconds { text: String, why: SecondsError },
    #[error("bad duration {0:?}: use e.g. 90s, 1.5s, 15m, 12h, 7d, 2w")]
    BadNumber(String),
    #[error("bad duration unit in {0:?}: use ms, s, m, h, d or w")]
    BadUnit(String),
    #[error("duration {0:?} is beyond 100 years")]
    BeyondLimit(String),
    #[error("{text:?} is not an RFC 3339 time ({reason}), e.g. 2026-11-30T16:00:00Z")]
    NotRfc3339 { text: String, reason: String },
    #[error("{0} (use 30m, 24h, 7d, 2w or an RFC 3339 time)")]
    NotSince(Box<DurationError>),
    #[error("{0:?} reaches before any time quotatop can show")]
    BeforeAnyTime(String),
}

/// Seconds as written in a file (`"90"`, `"1.5"`, `"2e3"`) → milliseconds, rounded. Refuses what
/// is not a number, negative, NaN or infinite, and anything beyond 100 years.
pub fn seconds_to_millis(text: &str) -> Result<Millis, DurationError> {
    let t = text.trim();
    let s: f64 = t
        .parse()
        .map_err(|_| DurationError::NotSeconds(t.to_string()))?;
    float_seconds_to_millis(s).map_err(|why| DurationError::Seconds {
        text: t.to_string(),
        why,
    })
}

/// [`seconds_to_millis`] for a number already parsed.
pub fn float_seconds_to_millis(s: f64) -> Result<Millis, SecondsError> {
    if !s.is_finite() {
        return Err(SecondsError::NotFinite);
    }
    if s < 0.0 {
        return Err(SecondsError::Negative);
    }
    let ms = (s * 1000.0).round();
    if ms > MAX_INPUT_MS as f64 {
        return Err(SecondsError::BeyondLimit);
    }
    Ok(ms as Millis)
}

/// Whole seconds (a TOML integer) → milliseconds within 100 years; the caller names the value.
pub fn whole_seconds_to_millis(s: i64) -> Result<Millis, SecondsError> {
    if s < 0 {
        return Err(SecondsError::Negative);
    }
    match s.checked_mul(1000) {
        Some(ms) if ms <= MAX_INPUT_MS => Ok(ms),
        _ => Err(SecondsError::BeyondLimit),
    }
}

/// A number and a unit → milliseconds: `90s`, `1.5s`, `15m`, `12h`, `7d`, `2w`, `50ms`, or a
/// plain number of milliseconds. The number is a decimal (`1.5s` is 1,500 ms, rounded to whole
/// milliseconds); blanks around it and before the unit are ignored. The result is at most
/// 100 years ([`MAX_INPUT_MS`]), so that subtracting it from any time quotatop handles cannot
/// overflow; callers with a tighter bound (the emulator's fault latencies: one hour) check it.
pub fn parse_duration(s: &str) -> Result<Millis, DurationError> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let bad_number = || DurationError::BadNumber(s.to_string());
    if !num.bytes().any(|b| b.is_ascii_digit()) {
        return Err(bad_number());
    }
    let unit_ms: i64 = match unit.trim_start() {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => return Err(DurationError::BadUnit(s.to_string())),
    };
    let beyond = || DurationError::BeyondLimit(s.to_string());
    if num.contains('.') {
        let n: f64 = num.parse().map_err(|_| bad_number())?;
        let ms = (n * unit_ms as f64).round();
        // Also false for NaN: only finite values within range get through.
        if (0.0..=MAX_INPUT_MS as f64).contains(&ms) {
            Ok(ms as Millis)
        } else {
            Err(beyond())
        }
    } else {
        // Digits only: too many of them is beyond range, not a malformed number.
        let n: i64 = num.parse().map_err(|_| beyond())?;
        match n.checked_mul(unit_ms) {
            Some(ms) if ms <= MAX_INPUT_MS => Ok(ms),
            _ => Err(beyond()),
        }
    }
}

/// Whether `t` starts like a date (`2026-…`).
fn looks_like_date(t: &str) -> bool {
    matches!(t.as_bytes(), [y0, y1, y2, y3, b'-', ..] if [y0, y1, y2, y3].iter().all(|b| b.is_ascii_digit()))
}

/// A point in the past as people type it — a duration back from `now_ms` (`30m`, `24h`, `7d`,
/// `2w`, as [`parse_duration`] reads them) or an RFC 3339 time — as epoch milliseconds. The one
/// checked parser behind every `--since`: it never panics, whatever the input.
pub fn parse_since(text: &str, now_ms: Millis) -> Result<Millis, DurationError> {
    let t = text.trim();
    match chrono::DateTime::parse_from_rfc3339(t) {
        Ok(dt) => return Ok(dt.timestamp_millis()),
        // Looks like a date (`2026-…`): say what is wrong with it as a time.
        Err(e) if looks_like_date(t) => {
            return Err(DurationError::NotRfc3339 {
                text: t.to_string(),
                reason: e.to_string(),
            });
        }
        Err(_) => {}
    }
    let back = parse_duration(t).map_err(|e| DurationError::NotSince(Box::new(e)))?;
    now_ms
        .checked_sub(back)
        .ok_or_else(|| DurationError::BeforeAnyTime(t.to_string()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn format_duration_uses_the_largest_two_units() {
        use super::format_duration_opt as f;
        assert_eq!(f(None), "-");
        assert_eq!(f(Some(-5)), "0s");
        assert_eq!(f(Some(45_000)), "45s");
        assert_eq!(f(Some(192_000)), "3m12s");
        assert_eq!(f(Some(7_500_000)), "2h05m");
        assert_eq!(f(Some(86_400_000)), "1d00h");
        assert_eq!(f(Some(7 * 86_400_000)), "7d00h");
    }

    use super::*;

    #[test]
    fn units_and_errors() {
        assert_eq!(parse_duration("7d"), Ok(7 * 86_400_000));
        assert_eq!(parse_duration(" 90s "), Ok(90_000));
        assert_eq!(parse_duration("250"), Ok(250));
        assert_eq!(parse_duration("2w"), Ok(14 * 86_400_000));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-5m").is_err());
        assert!(
            parse_duration("5y")
                .unwrap_err()
                .to_string()
                .contains("unit")
        );
        assert!(parse_duration("99999999999999999w").is_err());
        assert!(
            parse_duration("100000000d")
                .unwrap_err()
                .to_string()
                .contains("100 years")
        );
        assert!(
            parse_duration("5300w")
                .unwrap_err()
                .to_string()
                .contains("100 years")
        );
        assert_eq!(parse_duration("36525d"), Ok(MAX_INPUT_MS));
    }

    #[test]
    fn decimals_and_blanks() {
        assert_eq!(parse_duration("1.5s"), Ok(1_500));
        assert_eq!(parse_duration("50ms"), Ok(50));
        assert_eq!(parse_duration("50 ms"), Ok(50));
        assert_eq!(parse_duration("0.5h"), Ok(1_800_000));
        assert_eq!(parse_duration(".25s"), Ok(250));
        assert_eq!(parse_duration("2.5"), Ok(3));
        for bad in [".", "1.2.3s", "s", "1e3s", "-1.5s", "1.5 y"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(
            parse_duration("36525.1d")
                .unwrap_err()
                .to_string()
                .contains("100 years")
        );
    }

    #[test]
    fn since_never_panics() {
        let now = 1_796_000_000_000; // 2026-11
        assert_eq!(parse_since("7d", now), Ok(now - 7 * 86_400_000));
        assert_eq!(
            parse_since("2026-11-01T00:00:00Z", now),
            Ok(1_793_491_200_000)
        );
        assert!(
            parse_since("2026-13-01T00:00:00Z", now)
                .unwrap_err()
                .to_string()
                .contains("not an RFC 3339 time")
        );
        for bad in [
            "100000000d",
            "99999999999999999999w",
            "9223372036854775807ms",
            "-5m",
            "",
            "soon",
            "7y",
        ] {
            assert!(parse_since(bad, now).is_err(), "{bad}");
        }
        // The longest accepted duration from the smallest "now" still subtracts.
        assert!(parse_since("36525d", Millis::MIN).is_err());
        assert!(parse_since("36525d", 0).is_ok());
    }

    #[test]
    fn seconds_within_100_years() {
        assert_eq!(seconds_to_millis("1.5"), Ok(1_500));
        assert_eq!(seconds_to_millis(" 90 "), Ok(90_000));
        assert_eq!(seconds_to_millis("0"), Ok(0));
        let hundred_years_s = MAX_INPUT_MS / 1000;
        assert_eq!(
            seconds_to_millis(&hundred_years_s.to_string()),
            Ok(MAX_INPUT_MS)
        );
        for (t, want) in [
            ("1e300", "beyond 100 years"),
            ("-1", "negative"),
            ("NaN", "not a finite number"),
            ("inf", "not a finite number"),
            ("x", "not a number"),
            ("", "not a number"),
        ] {
            let e = seconds_to_millis(t).unwrap_err().to_string();
            assert!(e.contains(want), "{t}: {e}");
        }
        assert_eq!(
            seconds_to_millis(&(hundred_years_s + 1).to_string()).map_err(|e| e.to_string()),
            Err(format!("\"{}\" is beyond 100 years", hundred_years_s + 1))
        );
        assert_eq!(whole_seconds_to_millis(120), Ok(120_000));
        // 18446744073709552 s × 1000 wrapped to 0.4 s in u64 arithmetic.
        assert!(whole_seconds_to_millis(18_446_744_073_709_552).is_err());
        assert!(whole_seconds_to_millis(i64::MAX).is_err());
        assert!(whole_seconds_to_millis(-1).is_err());
    }
}
