//! Durations as people type them: `90s`, `15m`, `12h`, `7d`, `2w` (or plain milliseconds).

use super::Millis;

/// `90s`, `15m`, `12h`, `7d`, `2w` (or plain milliseconds) → milliseconds.
pub fn parse_duration(s: &str) -> Result<Millis, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: i64 = num
        .parse()
        .map_err(|_| format!("bad duration {s:?}: use e.g. 90s, 15m, 12h, 7d, 2w"))?;
    let unit_ms: i64 = match unit {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => {
            return Err(format!(
                "bad duration unit in {s:?}: use ms, s, m, h, d or w"
            ));
        }
    };
    n.checked_mul(unit_ms)
        .ok_or_else(|| format!("duration {s:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_errors() {
        assert_eq!(parse_duration("7d"), Ok(7 * 86_400_000));
        assert_eq!(parse_duration(" 90s "), Ok(90_000));
        assert_eq!(parse_duration("250"), Ok(250));
        assert_eq!(parse_duration("2w"), Ok(14 * 86_400_000));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-5m").is_err());
        assert!(parse_duration("5y").unwrap_err().contains("unit"));
        assert!(parse_duration("99999999999999999w").is_err());
    }
}
