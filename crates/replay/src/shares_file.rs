//! Quota shares as a file (`quotatop shares export / plan / apply`): the replay configuration's
//! TOML shape (the emulator scenario's `[[shares]]` and `[[capacity]]` entries), so one file
//! is a scenario's shares, a replay configuration and a proposed change alike.
//!
//! [`parse`] reads it without the engine's checks, so a lint can list every problem at once;
//! [`write`] writes the live configuration in the same shape.

use quotatop_model::{CapacityLimit, QuotaShare, ShareSpecError};

use super::ReplayError;
use super::config::{File, from_toml};

/// A shares file as written: each `[[shares]]` entry converted, or why it could not be.
#[derive(Debug, Clone, PartialEq)]
pub struct SharesFile {
    pub name: Option<String>,
    /// `[[capacity]]` (the service environment's; informational: `shares apply` does not
    /// change the environment).
    pub capacity: Vec<CapacityLimit>,
    /// In file order; `Err` names the entry and the problem (an unknown strategy, workload
    /// generators).
    pub shares: Vec<Result<QuotaShare, ShareSpecError>>,
}

impl SharesFile {
    /// The shares that converted, in file order.
    pub fn valid_shares(&self) -> Vec<QuotaShare> {
        self.shares.iter().filter_map(|s| s.clone().ok()).collect()
    }
}

/// Parses a shares file: syntax and type errors (with line, column and key) are errors; what
/// the engine or AWS would refuse (limits, names, counts) is left to the lint.
pub fn parse(text: &str, origin: &str) -> Result<SharesFile, ReplayError> {
    let file: File = from_toml(text, origin)?;
    let shares = file
        .shares
        .iter()
        .map(|s| {
            if s.generators.is_empty() {
                s.to_quota_share()
            } else {
                Err(ShareSpecError::Generators {
                    share: s.name.clone(),
                    place: "shares files",
                })
            }
        })
        .collect();
    Ok(SharesFile {
        name: file.name,
        capacity: file
            .capacity
            .iter()
            .map(|c| CapacityLimit::new(c.instance_type.clone(), c.max))
            .collect(),
        shares,
    })
}

/// A TOML string (quoted and escaped).
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The shares and environment capacity as a shares file, with `header` as leading comments.
/// [`parse`] gives back the same shares (limits in instance-type order).
pub fn write(
    name: &str,
    header: &[String],
    capacity: &[CapacityLimit],
    shares: &[QuotaShare],
) -> String {
    let mut out = String::new();
    for h in header {
        for line in h.lines() {
            out.push_str(&format!("# {line}\n"));
        }
    }
    out.push_str(&format!("name = {}\n", quoted(name)));
    for c in capacity {
        out.push_str(&format!(
            "\n[[capacity]]\ninstance_type = {}\nmax = {}\n",
            quoted(&c.instance_type),
            c.max_capacity
        ));
    }
    for s in shares {
        out.push_str(&format!(
            "\n[[shares]]\nname = {}\nstrategy = {}\n",
            quoted(&s.name),
            quoted(s.sharing.strategy.as_str())
        ));
        if s.sharing.strategy.borrows() {
            out.push_str(&format!(
                "borrow_limit = {}\n",
                s.sharing
                    .borrow_limit
                    .unwrap_or(quotatop_model::UNLIMITED_BORROW)
            ));
        }
        out.push_str(&format!(
            "in_share_preemption = {}\n",
            s.in_share_preemption.enabled()
        ));
        if s.state == quotatop_model::ShareState::Disabled {
            out.push_str("disabled = true\n");
        }
        let mut limits: Vec<&CapacityLimit> = s.capacity_limits.iter().collect();
        limits.sort_by(|a, b| a.instance_type.cmp(&b.instance_type));
        let limits: Vec<String> = limits
            .iter()
            .map(|l| format!("{} = {}", quoted(&l.instance_type), l.max_capacity))
            .collect();
        out.push_str(&format!("limits = {{ {} }}\n", limits.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_model::{InSharePreemption, ShareState, SharingConfig};

    #[test]
    fn written_shares_parse_back_the_same_and_as_a_replay_config() {
        let shares = vec![
            QuotaShare::new(
                "research",
                vec![
                    CapacityLimit::new("ml.p4d.24xlarge", 4),
                    CapacityLimit::new("ml.g5.2xlarge", 2),
                ],
                SharingConfig::lend_and_borrow(200),
            )
            .with_in_share_preemption(true),
            QuotaShare {
                state: ShareState::Disabled,
                ..QuotaShare::new(
                    "odd \"name\"",
                    vec![CapacityLimit::new("ml.p4d.24xlarge", 1)],
                    SharingConfig::reserve(),
                )
            },
        ];
        let cap = vec![CapacityLimit::new("ml.p4d.24xlarge", 12)];
        let text = write("q (live)", &["exported\nby a test".into()], &cap, &shares);
        assert!(
            text.starts_with("# exported\n# by a test\nname = \"q (live)\"\n"),
            "{text}"
        );
        let back = parse(&text, "x.toml").unwrap();
        assert_eq!(back.capacity, cap);
        let got = back.valid_shares();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].sharing, shares[0].sharing);
        assert_eq!(got[0].in_share_preemption, InSharePreemption::Enabled);
        let mut want = shares[0].capacity_limits.clone();
        want.sort_by(|a, b| a.instance_type.cmp(&b.instance_type));
        assert_eq!(got[0].capacity_limits, want);
        assert_eq!(got[1], shares[1]);
        // The same file is a replay configuration (one format).
        let replay_cfg = shares[..1].to_vec();
        let text = write("q", &[], &cap, &replay_cfg);
        let cfg = super::super::ReplayConfig::parse(&text, "x.toml", "x").unwrap();
        assert_eq!(cfg.shares[0].sharing, shares[0].sharing);
    }

    #[test]
    fn an_unknown_strategy_is_the_entry_s_problem_and_bad_toml_an_error() {
        let text =
            "[[shares]]\nname = \"a\"\nstrategy = \"SHARE\"\nlimits = { \"ml.g5.2xlarge\" = 1 }\n";
        let f = parse(text, "x.toml").unwrap();
        assert!(
            f.shares[0]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("\"SHARE\"")
        );
        let e = parse("[[shares]]\nname = 3\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml: line 2"), "{e}");
    }
}
