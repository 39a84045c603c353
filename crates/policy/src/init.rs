//! `quotatop policy init`: a first policy from what is configured today: one class per live
//! share, its promise from `[deadlines]`, its budget from `[budgets]`, protected when the share
//! is RESERVE, may borrow when it is LEND_AND_BORROW. The old config sections keep working;
//! the file is a starting point to edit (names, ranges, operators, owners).

use std::collections::BTreeMap;

use quotatop_analysis::scorecard::decision::{Budget, DeadlineRule};
use quotatop_model::{MAX_PRIORITY, QuotaShare};

use crate::file::POLICY_VERSION;

/// What today's configuration says.
#[derive(Debug, Clone, Copy)]
pub struct Today<'a> {
    /// The queue's name.
    pub queue: &'a str,
    pub shares: &'a [QuotaShare],
    /// `[deadlines]` (per share or `*`).
    pub deadlines: &'a BTreeMap<String, DeadlineRule>,
    /// `[budgets]` (per share or `*`).
    pub budgets: &'a BTreeMap<String, Budget>,
}

/// A TOML string, quoted and escaped.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Seconds as the policy writes a duration: whole days, hours or minutes when exact.
fn duration(secs: u64) -> String {
    match secs {
        s if s > 0 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s > 0 && s % 3_600 == 0 => format!("{}h", s / 3_600),
        s if s > 0 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// A class name from a share name (a share name may hold characters a class name may not).
fn class_name(share: &str) -> String {
    let name: String = share
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "class".into()
    } else {
        name
    }
}

/// The policy file's text.
pub fn init(today: &Today<'_>) -> String {
    let mut out = format!(
        "# A first policy for job queue {queue}, from its live shares and the config file's\n\
         # [deadlines] and [budgets]: one class per share. Edit the names, descriptions and\n\
         # priority ranges, say who may use each class, and name each share's owners; then\n\
         # `quotatop policy lint`.\nversion = {POLICY_VERSION}\nname = {name}\n",
        queue = today.queue,
        name = quoted(today.queue),
    );
    for s in today.shares {
        out.push_str(&class_entry(today, s));
    }
    out.push_str("\n# Who approves a change of each share's limits (`--approved-by`).\n[owners]\n");
    for s in today.shares {
        out.push_str(&format!("{} = []\n", quoted(&s.name)));
    }
    out
}

/// The share's own entry, else `*`'s.
fn pick<T: Clone>(m: &BTreeMap<String, T>, share: &str) -> Option<T> {
    m.get(share).or_else(|| m.get("*")).cloned()
}

fn class_entry(today: &Today<'_>, s: &QuotaShare) -> String {
    let deadline = pick(today.deadlines, &s.name);
    let budget = pick(today.budgets, &s.name);
    let mut e = format!(
        "\n[[class]]\nname = {}\ndescription = {}\npriority = [0, {MAX_PRIORITY}]\nshares = [{}]\n",
        quoted(&class_name(&s.name)),
        quoted(&format!("The work of share {}", s.name)),
        quoted(&s.name),
    );
    if let Some(d) = deadline {
        if let Some(w) = d.max_wait_s {
            e.push_str(&format!("max_wait = {}\n", quoted(&duration(w))));
        }
        if let Some(f) = d.deadline_factor {
            e.push_str(&format!("deadline_factor = {f:?}\n"));
        }
    }
    if let Some(b) = budget {
        if let Some(n) = b.max_preemptions_per_job {
            e.push_str(&format!("max_preemptions_per_job = {n}\n"));
        }
        if let Some(h) = b.max_lost_gpu_hours_per_day {
            e.push_str(&format!("max_lost_gpu_hours_per_day = {h:?}\n"));
        }
    }
    e.push_str(&format!(
        "protected = {}\nmay_borrow = {}\n",
        s.sharing.strategy == quotatop_model::SharingStrategy::Reserve,
        s.sharing.strategy.borrows()
    ));
    e
}
