//! How scorecard figures are written in reports (one place for `report` and `replay`).

use quotatop_model::Millis;

/// `-`, `42s`, `3m07s`, `5h12m`.
pub fn duration(ms: Option<Millis>) -> String {
    match ms {
        None => "-".to_string(),
        Some(ms) if ms < 60_000 => format!("{}s", ms / 1000),
        Some(ms) if ms < 3_600_000 => format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60),
        Some(ms) => format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}

/// `-` or `12.3%`.
pub fn percent(r: Option<f64>) -> String {
    r.map_or("-".to_string(), |r| format!("{:.1}%", r * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(duration(None), "-");
        assert_eq!(duration(Some(42_000)), "42s");
        assert_eq!(duration(Some(187_000)), "3m07s");
        assert_eq!(duration(Some(18_720_000)), "5h12m");
        assert_eq!(percent(Some(0.1234)), "12.3%");
        assert_eq!(percent(None), "-");
    }
}
