//! The lint of a proposed quota-share configuration (`quotatop shares plan / apply`): every
//! problem at once, before anything reaches AWS. Errors stop the change; warnings are said.

use std::collections::{BTreeMap, BTreeSet};

use quotatop_model::{
    CapacityLimit, MAX_CAPACITY_LIMITS, MAX_SHARES_PER_QUEUE, QuotaShare, ShareSpecError,
    SharingStrategy, is_training_instance_type,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One problem, and the share it is about (`None`: the whole file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub share: Option<String>,
    pub message: String,
}

impl Finding {
    fn error(share: Option<&str>, message: String) -> Self {
        Self {
            severity: Severity::Error,
            share: share.map(String::from),
            message,
        }
    }
    fn warning(share: Option<&str>, message: String) -> Self {
        Self {
            severity: Severity::Warning,
            share: share.map(String::from),
            message,
        }
    }

    /// `error: share a: …` / `warning: …`.
    pub fn line(&self) -> String {
        match &self.share {
            Some(s) => format!("{}: share {s}: {}", self.severity.as_str(), self.message),
            None => format!("{}: {}", self.severity.as_str(), self.message),
        }
    }
}

/// What the lint checks against.
#[derive(Debug, Clone, Default)]
pub struct LintContext {
    /// The service environment's capacity limits (empty: not known, instance types unchecked).
    pub environment: Vec<CapacityLimit>,
    /// The shares some job used in the window, with the window's name (`the last 7d`), when
    /// the journal could tell; `None`: the RESERVE check is skipped.
    pub used: Option<(BTreeSet<String>, String)>,
}

/// Every problem of `shares` (the file's entries, in order; `Err` is an entry that could not
/// be read), errors first.
pub fn lint(shares: &[Result<QuotaShare, ShareSpecError>], ctx: &LintContext) -> Vec<Finding> {
    let mut out = Vec::new();
    if shares.is_empty() {
        out.push(Finding::error(
            None,
            "the file has no [[shares]] entry (a quota-management queue needs at least one)"
                .to_string(),
        ));
    }
    if shares.len() > MAX_SHARES_PER_QUEUE {
        out.push(Finding::error(
            None,
            format!(
                "{} shares: a job queue holds at most {MAX_SHARES_PER_QUEUE}",
                shares.len()
            ),
        ));
    }
    let env: BTreeMap<&str, u32> = ctx
        .environment
        .iter()
        .map(|l| (l.instance_type.as_str(), l.max_capacity))
        .collect();
    if env.is_empty() {
        out.push(Finding::warning(
            None,
            "the service environment's capacity is not known: instance types and totals not checked"
                .to_string(),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for entry in shares {
        let s = match entry {
            Ok(s) => s,
            Err(why) => {
                out.push(Finding::error(None, why.to_string()));
                continue;
            }
        };
        let name = Some(s.name.as_str());
        if !seen.insert(s.name.as_str()) {
            out.push(Finding::error(name, "named twice".to_string()));
        }
        if let Err(e) = quotatop_engine::validate_share_name(&s.name) {
            out.push(Finding::error(name, e.to_string()));
        }
        let n = s.capacity_limits.len();
        if n == 0 || n > MAX_CAPACITY_LIMITS {
            out.push(Finding::error(
                name,
                format!("{n} capacity limits: a share has 1 to {MAX_CAPACITY_LIMITS}"),
            ));
        }
        limit_findings(s, &env, &mut totals, &mut out);
        if let Err(e) = quotatop_engine::validate_sharing(&s.sharing) {
            out.push(Finding::error(name, e.to_string()));
        }
        if s.sharing.strategy == SharingStrategy::Reserve
            && let Some((used, window)) = &ctx.used
            && !used.contains(&s.name)
        {
            out.push(Finding::warning(
                name,
                format!(
                    "RESERVE, but no job used it in {window}: its capacity would sit idle (LEND lets others use it)"
                ),
            ));
        }
    }
    total_findings(&totals, &env, &mut out);
    out.sort_by_key(|f| f.severity);
    out
}

/// Each capacity limit of share `s`: a training instance type the environment has, at least 1;
/// adds them to `totals` per type.
fn limit_findings<'a>(
    s: &'a QuotaShare,
    env: &BTreeMap<&str, u32>,
    totals: &mut BTreeMap<&'a str, u64>,
    out: &mut Vec<Finding>,
) {
    let name = Some(s.name.as_str());
    for l in &s.capacity_limits {
        let t = l.instance_type.as_str();
        if !is_training_instance_type(t) {
            out.push(Finding::error(
                name,
                format!("{t:?} is not a SageMaker training instance type (ml.<family>.<size>)"),
            ));
        } else if !env.is_empty() && !env.contains_key(t) {
            out.push(Finding::error(
                name,
                format!(
                    "{t} is not an instance type of the service environment (it has {})",
                    env.keys().copied().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        if l.max_capacity < 1 {
            out.push(Finding::error(
                name,
                format!("the limit for {t} must be at least 1"),
            ));
        }
        *totals.entry(t).or_default() += u64::from(l.max_capacity);
    }
}

/// The shares' limits per type against the environment's capacity.
fn total_findings(totals: &BTreeMap<&str, u64>, env: &BTreeMap<&str, u32>, out: &mut Vec<Finding>) {
    for (t, total) in totals {
        if let Some(&cap) = env.get(t)
            && *total > u64::from(cap)
        {
            out.push(Finding::warning(
                None,
                format!(
                    "the shares' limits for {t} sum to {total}, above the service environment's {cap} (allowed: not every share can hold its limit at once)"
                ),
            ));
        }
    }
}

/// Whether any finding is an error.
pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_model::SharingConfig;

    const P4: &str = "ml.p4d.24xlarge";

    fn ok(
        name: &str,
        limits: &[(&str, u32)],
        sharing: SharingConfig,
    ) -> Result<QuotaShare, ShareSpecError> {
        Ok(QuotaShare::new(
            name,
            limits
                .iter()
                .map(|&(t, n)| CapacityLimit::new(t, n))
                .collect(),
            sharing,
        ))
    }

    fn ctx() -> LintContext {
        LintContext {
            environment: vec![CapacityLimit::new(P4, 12)],
            used: Some((BTreeSet::from(["a".to_string()]), "the last 7d".to_string())),
        }
    }

    #[test]
    fn a_clean_file_has_no_findings() {
        let shares = vec![
            ok("a", &[(P4, 6)], SharingConfig::reserve()),
            ok("b", &[(P4, 6)], SharingConfig::lend_and_borrow(100)),
        ];
        let mut c = ctx();
        c.used = Some((BTreeSet::from(["a".into(), "b".into()]), "x".into()));
        assert_eq!(lint(&shares, &c), vec![]);
    }

    #[test]
    fn every_problem_is_listed_errors_first() {
        let six: Vec<(&str, u32)> = [
            "ml.p4d.24xlarge",
            "ml.g5.2xlarge",
            "ml.g5.4xlarge",
            "ml.g5.8xlarge",
            "ml.g5.12xlarge",
            "ml.g5.16xlarge",
        ]
        .iter()
        .map(|&t| (t, 1))
        .collect();
        let mut shares = vec![
            ok("six", &six, SharingConfig::lend()),
            ok("bad name!", &[(P4, 1)], SharingConfig::lend()),
            ok("a", &[("ml.p5.48xlarge", 2)], SharingConfig::lend()),
            ok("idle", &[(P4, 20)], SharingConfig::reserve()),
            Ok(QuotaShare::new(
                "lend-borrow",
                vec![CapacityLimit::new(P4, 1)],
                SharingConfig {
                    strategy: SharingStrategy::Lend,
                    borrow_limit: Some(50),
                },
            )),
            Err(ShareSpecError::BadStrategy {
                share: "x".into(),
                strategy: "SHARE".into(),
            }),
        ];
        for i in 0..15 {
            shares.push(ok(&format!("s{i}"), &[(P4, 1)], SharingConfig::lend()));
        }
        let f = lint(&shares, &ctx());
        let lines: Vec<String> = f.iter().map(Finding::line).collect();
        let text = lines.join("\n");
        for want in [
            "error: 21 shares: a job queue holds at most 20",
            "error: share six: 6 capacity limits: a share has 1 to 5",
            "error: share six: ml.g5.2xlarge is not an instance type of the service environment (it has ml.p4d.24xlarge)",
            "error: share bad name!: invalid quota share name",
            "error: share a: ml.p5.48xlarge is not an instance type",
            "error: share lend-borrow: borrowLimit",
            "error: share x: strategy \"SHARE\"",
            "warning: share idle: RESERVE, but no job used it in the last 7d",
            "warning: the shares' limits for ml.p4d.24xlarge sum to 38, above the service environment's 12",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        assert!(has_errors(&f));
        assert_eq!(f.last().map(|x| x.severity), Some(Severity::Warning));
        // Five of the six types are unknown to the environment: each is named.
        assert_eq!(text.matches("share six: ml.g5.").count(), 5, "{text}");
    }

    #[test]
    fn without_a_journal_or_environment_those_checks_are_skipped_and_said() {
        let shares = vec![ok(
            "idle",
            &[("ml.p5.48xlarge", 1)],
            SharingConfig::reserve(),
        )];
        let f = lint(&shares, &LintContext::default());
        assert!(!has_errors(&f));
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("not known"));
    }
}
