//! How scorecard figures are written in reports (one place for `report` and `replay`).

/// `-`, `42s`, `3m07s`, `5h12m`, `1d06h`: the one formatter,
/// [`quotatop_model::format_duration_opt`].
pub use quotatop_model::format_duration_opt as duration;

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
