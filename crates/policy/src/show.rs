//! A policy as text: each class's promise, budget and rules in words, and the classes as a
//! table (what `policy lint` and `policy check` show).

use quotatop_model::format_duration;

use crate::file::{Class, Policy};

impl Class {
    /// `capacity within 15m, done within 3× its work`, or `none`.
    pub fn promise_text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(w) = self.promise.max_wait_ms {
            parts.push(format!("capacity within {}", format_duration(w)));
        }
        if let Some(f) = self.promise.deadline_factor {
            parts.push(format!("done within {f}× its work"));
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
    /// `≤ 1 preemption/job, ≤ 40 GPU-h lost/day`, or `none`.
    pub fn budget_text(&self) -> String {
        let mut parts = Vec::new();
        match self.budget.max_preemptions_per_job {
            Some(0) => parts.push("no preemption".to_string()),
            Some(n) => parts.push(format!("≤ {n} preemption(s)/job")),
            None => {}
        }
        if let Some(h) = self.budget.max_lost_gpu_hours_per_day {
            parts.push(format!("≤ {h} GPU-h lost/day"));
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
    /// `protected, borrows`, `-` when neither.
    fn sharing_text(&self) -> String {
        match (self.protected, self.may_borrow) {
            (true, true) => "protected, borrows".into(),
            (true, false) => "protected".into(),
            (false, true) => "borrows".into(),
            (false, false) => "-".into(),
        }
    }
    /// Who may move a job in, and whether it takes a change record.
    fn who_text(&self) -> String {
        let who = if self.operators.is_empty() {
            "anyone".to_string()
        } else {
            self.operators.join(", ")
        };
        if self.change_record {
            format!("{who}; change record")
        } else {
            who
        }
    }
}

/// The classes as a Markdown table, with the membership order under it.
pub fn classes_table(policy: &Policy) -> String {
    let mut out = String::from(
        "| class | priority | shares | promise | interruption budget | sharing | who may move a job in |\n|---|---|---|---|---|---|---|\n",
    );
    for c in &policy.classes {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            c.name,
            c.priority,
            c.shares.join(", "),
            c.promise_text(),
            c.budget_text(),
            c.sharing_text(),
            c.who_text(),
        ));
    }
    out.push_str(&format!(
        "\nA job's class: its `{}` tag, else its share, else its priority range.\n",
        crate::file::CLASS_TAG
    ));
    out
}
