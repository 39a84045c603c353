//! Input validation for a priority change, as typed.

use quotatop_model::MAX_PRIORITY;

/// The default of [`PriorityPolicy::min_justification_chars`].
pub const DEFAULT_MIN_JUSTIFICATION_CHARS: u32 = 15;

/// When a change needs a change-record id, and how long a justification must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PriorityPolicy {
    /// A change of at least this much (up or down) is "large".
    pub large_change: u32,
    /// Raising a job to this priority or above lifts it into the protected band.
    pub protected_from: Option<u32>,
    /// The shortest justification accepted, in characters (trimmed): "ok" says nothing to the
    /// next operator reading the audit log.
    pub min_justification_chars: u32,
}

impl PriorityPolicy {
    /// The policy as the audit record keeps it, with where it came from.
    pub fn describe(&self, source: &str) -> String {
        let protected = self
            .protected_from
            .map_or_else(|| "none".to_string(), |p| p.to_string());
        format!(
            "large_change={} protected_from={protected} min_justification_chars={} ({source})",
            self.large_change, self.min_justification_chars
        )
    }
}

impl Default for PriorityPolicy {
    fn default() -> Self {
        Self {
            large_change: 1000,
            protected_from: Some(9000),
            min_justification_chars: DEFAULT_MIN_JUSTIFICATION_CHARS,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    #[error("enter a priority between 0 and {MAX_PRIORITY}")]
    Empty,
    #[error("{0:?} is not a whole number: enter 0 to {MAX_PRIORITY}")]
    NotANumber(String),
    #[error("{0} is out of range: enter 0 to {MAX_PRIORITY}")]
    OutOfRange(String),
    #[error("the priority is already {0}")]
    Unchanged(u32),
    #[error("a justification is required")]
    NoJustification,
    #[error(
        "the justification is {have} characters; at least {min} are required ([priority] \
         min_justification_chars): say why, e.g. the incident, the request or the deadline"
    )]
    ShortJustification { have: usize, min: u32 },
    #[error("{0}: a change-record id is required")]
    ChangeRecordRequired(String),
}

/// Parses the priority field as typed.
pub fn parse_priority(text: &str) -> Result<u32, ValidationError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(ValidationError::Empty);
    }
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(ValidationError::NotANumber(t.to_string()));
    }
    match t.parse::<i64>() {
        Ok(n) if (0..=MAX_PRIORITY as i64).contains(&n) => Ok(n as u32),
        // All digits but not a small enough number: out of range either way.
        _ => Err(ValidationError::OutOfRange(t.to_string())),
    }
}

/// Checks a whole change: new priority differs, a justification is given, and a change record
/// when the policy asks for one.
pub fn check_change(
    old: u32,
    new: u32,
    justification: &str,
    change_record: Option<&str>,
    policy: &PriorityPolicy,
) -> Result<(), ValidationError> {
    if old == new {
        return Err(ValidationError::Unchanged(old));
    }
    let justification = justification.trim();
    if justification.is_empty() {
        return Err(ValidationError::NoJustification);
    }
    let have = justification.chars().count();
    if have < policy.min_justification_chars as usize {
        return Err(ValidationError::ShortJustification {
            have,
            min: policy.min_justification_chars,
        });
    }
    if let Some(why) = change_record_reason(old, new, policy)
        && change_record.is_none_or(|c| c.trim().is_empty())
    {
        return Err(ValidationError::ChangeRecordRequired(why));
    }
    Ok(())
}

/// Why this change needs a change record, if it does.
pub fn change_record_reason(old: u32, new: u32, policy: &PriorityPolicy) -> Option<String> {
    let delta = old.abs_diff(new);
    if delta >= policy.large_change {
        return Some(format!(
            "a change of {delta} (at least {}) is large",
            policy.large_change
        ));
    }
    if let Some(p) = policy.protected_from
        && new >= p
        && old < p
    {
        return Some(format!("{new} is in the protected band ({p} and above)"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_as_typed() {
        assert_eq!(parse_priority(" 42 "), Ok(42));
        assert_eq!(parse_priority("9999"), Ok(9999));
        assert_eq!(parse_priority(""), Err(ValidationError::Empty));
        assert_eq!(parse_priority("  "), Err(ValidationError::Empty));
        assert_eq!(
            parse_priority("abc"),
            Err(ValidationError::NotANumber("abc".into()))
        );
        assert_eq!(
            parse_priority("1.5"),
            Err(ValidationError::NotANumber("1.5".into()))
        );
        assert_eq!(
            parse_priority("10000"),
            Err(ValidationError::OutOfRange("10000".into()))
        );
        assert_eq!(
            parse_priority("-1"),
            Err(ValidationError::OutOfRange("-1".into()))
        );
        assert_eq!(
            parse_priority("99999999999999999999"),
            Err(ValidationError::OutOfRange("99999999999999999999".into()))
        );
        assert_eq!(
            parse_priority("--"),
            Err(ValidationError::NotANumber("--".into()))
        );
    }

    #[test]
    fn change_rules() {
        let p = PriorityPolicy::default();
        let why = "INC-42 deadline today";
        assert_eq!(check_change(10, 20, why, None, &p), Ok(()));
        assert_eq!(
            check_change(10, 10, why, None, &p),
            Err(ValidationError::Unchanged(10))
        );
        assert_eq!(
            check_change(10, 20, " ", None, &p),
            Err(ValidationError::NoJustification)
        );
        assert!(matches!(
            check_change(10, 1010, why, None, &p),
            Err(ValidationError::ChangeRecordRequired(_))
        ));
        assert_eq!(check_change(10, 1010, why, Some("CHG-1"), &p), Ok(()));
        assert!(matches!(
            check_change(8500, 9100, why, Some(""), &p),
            Err(ValidationError::ChangeRecordRequired(m)) if m.contains("protected")
        ));
        // Large downward changes need one too.
        assert!(check_change(5000, 10, why, None, &p).is_err());
    }

    /// Issue 29 §2.16: "ok" is not a justification: at least `min_justification_chars`
    /// (default 15) characters, trimmed, counted as characters (not bytes), with a message
    /// that names the setting.
    #[test]
    fn a_justification_has_a_minimum_length() {
        let p = PriorityPolicy::default();
        assert_eq!(p.min_justification_chars, 15);
        let short = check_change(10, 20, "  ok  ", None, &p);
        assert_eq!(
            short,
            Err(ValidationError::ShortJustification { have: 2, min: 15 })
        );
        let text = short.unwrap_err().to_string();
        assert!(text.contains("min_justification_chars"), "{text}");
        assert!(text.contains("at least 15"), "{text}");
        assert!(check_change(10, 20, "fourteen chars", None, &p).is_err());
        assert_eq!(check_change(10, 20, "fifteen chars!!", None, &p), Ok(()));
        // Characters, not bytes: 15 accented letters pass.
        assert_eq!(check_change(10, 20, &"é".repeat(15), None, &p), Ok(()));
        let lax = PriorityPolicy {
            min_justification_chars: 0,
            ..p
        };
        assert_eq!(check_change(10, 20, "ok", None, &lax), Ok(()));
        assert_eq!(
            check_change(10, 20, "", None, &lax),
            Err(ValidationError::NoJustification)
        );
    }
}
