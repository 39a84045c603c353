//! `/metrics` for Prometheus: the figures of the latest snapshot `record` journaled, encoded by
//! `prometheus-client` (OpenMetrics) and served by [`server`], in the classic text format
//! unless the scraper asks for OpenMetrics.
//!
//! Every figure comes from the analysis function the console and the reports use (one figure,
//! one definition): [`share_usage`] for capacity, [`dispatch_order`] for RUNNABLE work and its
//! waiting, [`running_jobs`], [`preemptions`] (the loop rule and the interruption budgets).

pub mod server;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use quotatop_analysis::scorecard::PriorityBand;
use quotatop_analysis::{
    GpuTable, LoopRule, dispatch_order, preemptions, running_jobs, share_usage,
};
use quotatop_model::{HealthState, Millis, QueueSnapshot, Snapshot};
use quotatop_store::journal::JournalStatus;

/// Content type of the OpenMetrics exposition.
pub const OPENMETRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Content type of the classic Prometheus text exposition.
pub const CLASSIC_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

type Labels = Vec<(String, String)>;
type G = Family<Labels, Gauge<f64, AtomicU64>>;
type C = Family<Labels, Counter<f64, AtomicU64>>;

/// What a scrape encodes besides the snapshot.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub rule: LoopRule,
    pub gpus: GpuTable,
    /// The class policy's breaches per queue and class, as `policy check` counts them over the
    /// scorecard window; `record` refreshes them from the journal (empty: no policy).
    pub policy: PolicyBreaches,
    /// Batch's calls made outside quotatop per API call name, as `audit list` finds them in
    /// the journal's CloudTrail calls; `record --events-queue` refreshes them.
    pub outside: OutsideChanges,
}

/// (API call name, changes made outside quotatop), shared between `record`'s event intake and
/// the scrapes.
#[derive(Debug, Clone, Default)]
pub struct OutsideChanges(std::sync::Arc<std::sync::Mutex<Vec<(String, usize)>>>);

impl OutsideChanges {
    pub fn set(&self, v: Vec<(String, usize)>) {
        if let Ok(mut g) = self.0.lock() {
            *g = v;
        }
    }
    pub fn get(&self) -> Vec<(String, usize)> {
        self.0.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// (queue, class, breaches), shared between `record`'s policy task and the scrapes.
#[derive(Debug, Clone, Default)]
pub struct PolicyBreaches(std::sync::Arc<std::sync::Mutex<Vec<(String, String, usize)>>>);

impl PolicyBreaches {
    pub fn set(&self, v: Vec<(String, String, usize)>) {
        if let Ok(mut g) = self.0.lock() {
            *g = v;
        }
    }
    pub fn get(&self) -> Vec<(String, String, usize)> {
        self.0.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// True when an `Accept` header asks for OpenMetrics.
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| a.contains("application/openmetrics-text"))
}

/// The exposition of `snap` (none yet: only the health families) at local time `now`, with
/// its content type; the journal's families only when there is a journal (`journal`).
pub fn exposition(
    snap: Option<&Snapshot>,
    journal: Option<&JournalStatus>,
    ctx: &Context,
    now: Millis,
    openmetrics: bool,
) -> (String, &'static str) {
    let registry = registry(snap, journal, ctx, now);
    let mut text = String::new();
    if encode(&mut text, &registry).is_err() {
        text = "# EOF\n".to_string();
    }
    if openmetrics {
        (text, OPENMETRICS_TYPE)
    } else {
        (to_classic(&text), CLASSIC_TYPE)
    }
}

/// OpenMetrics text as the classic format: counters named with their `_total` in HELP and
/// TYPE, no `# UNIT` and no `# EOF`.
pub fn to_classic(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(&name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// A label value as both exposition formats require it inside its double quotes: `\`, `"`
/// and line feed escaped. The encoder (prometheus-client 0.22) writes values as given, so a
/// share named `research"} 0` + newline + `x 1` would otherwise end the label set and inject
/// a sample of its own (and `promtool check metrics` rejects the whole page). Other control
/// and bidirectional formatting characters (ESC, BEL…, [`quotatop_model::is_unsafe_char`])
/// become `�`, as on every other output: a terminal running `curl` on `/metrics` would obey
/// them, and the exposition format has no escape for them.
pub fn escape_label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if quotatop_model::is_unsafe_char(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), escape_label_value(v)))
        .collect()
}

struct Families {
    g: BTreeMap<&'static str, G>,
    c: BTreeMap<&'static str, C>,
}

impl Families {
    fn set(&self, name: &str, l: Labels, v: f64) {
        if let Some(f) = self.g.get(name) {
            f.get_or_create(&l).set(v);
        }
    }
    fn add(&self, name: &str, l: Labels, v: f64) {
        if let Some(f) = self.g.get(name) {
            f.get_or_create(&l).inc_by(v);
        }
    }
    fn count(&self, name: &str, l: Labels, v: f64) {
        if let Some(f) = self.c.get(name) {
            f.get_or_create(&l).inc_by(v);
        }
    }
}

/// Gauges: (name, help).
const GAUGES: &[(&str, &str)] = &[
    (
        "quotatop_capacity_limit_instances",
        "A share's own capacity limit for an instance type, in instances",
    ),
    (
        "quotatop_capacity_used_instances",
        "Instances a share's SCHEDULED, STARTING and RUNNING jobs hold",
    ),
    (
        "quotatop_capacity_own_used_instances",
        "A share's use up to its own limit, in instances",
    ),
    (
        "quotatop_capacity_borrowed_instances",
        "A share's use beyond its own limit (borrowed), in instances",
    ),
    (
        "quotatop_capacity_lent_instances",
        "A share's own capacity in use by other shares, in instances",
    ),
    (
        "quotatop_capacity_idle_instances",
        "A share's own capacity neither used nor lent, in instances",
    ),
    (
        "quotatop_capacity_limit_gpus",
        "A share's own capacity limit for an instance type, in GPUs",
    ),
    (
        "quotatop_capacity_used_gpus",
        "GPUs a share's SCHEDULED, STARTING and RUNNING jobs hold",
    ),
    (
        "quotatop_capacity_own_used_gpus",
        "A share's use up to its own limit, in GPUs",
    ),
    (
        "quotatop_capacity_borrowed_gpus",
        "A share's use beyond its own limit (borrowed), in GPUs",
    ),
    (
        "quotatop_capacity_lent_gpus",
        "A share's own capacity in use by other shares, in GPUs",
    ),
    (
        "quotatop_capacity_idle_gpus",
        "A share's own capacity neither used nor lent, in GPUs",
    ),
    (
        "quotatop_runnable_jobs",
        "RUNNABLE jobs per share and priority band",
    ),
    (
        "quotatop_oldest_runnable_age_seconds",
        "How long the longest-waiting RUNNABLE job of a share and band has waited (service clock)",
    ),
    (
        "quotatop_running_jobs",
        "Jobs of a share holding capacity (SCHEDULED, STARTING, RUNNING)",
    ),
    (
        "quotatop_looping_jobs",
        "Jobs caught in a preemption loop (the console's loop rule)",
    ),
    (
        "quotatop_preemption_budget_breached_jobs",
        "Jobs preempted more often than their share's interruption budget",
    ),
    (
        "quotatop_misconfigured_jobs",
        "RUNNABLE jobs the service reports as misconfigured (they will never start)",
    ),
    (
        "quotatop_data_age_seconds",
        "Seconds since a queue's data last refreshed completely",
    ),
    (
        "quotatop_last_snapshot_timestamp_seconds",
        "When the recorder's latest snapshot was taken (Unix time)",
    ),
    (
        "quotatop_refresh_up",
        "1 when the last refresh was healthy, 0 when throttled, degraded, unreachable or denied",
    ),
    (
        "quotatop_refresh_calls_last_minute",
        "AWS API calls the poller made in the last 60 seconds",
    ),
    (
        "quotatop_refresh_throttles_last_minute",
        "Throttled AWS API responses in the last 60 seconds",
    ),
    (
        "quotatop_refresh_errors_last_minute",
        "Failed AWS API calls (other than throttling) in the last 60 seconds",
    ),
    (
        "quotatop_policy_breaches",
        "Breaches of the class policy per queue and class over the scorecard window (the count `quotatop policy check` reports)",
    ),
    (
        "quotatop_journal_up",
        "1 while the journal is writable, 0 while it is unavailable",
    ),
];

/// Counters: (name without `_total`, help).
const COUNTERS: &[(&str, &str)] = &[
    (
        "quotatop_preemptions",
        "Preemptions of a share's jobs the API still shows (sum of preemptedAttemptCount)",
    ),
    (
        "quotatop_lost_gpu_seconds",
        "GPU-seconds (GPU-hours x 3600) of the recent preempted attempts of a share's jobs (an upper bound of the work lost)",
    ),
    (
        "quotatop_outside_changes",
        "Batch calls changing a job's priority, ending a job or changing a queue or quota share that quotatop did not make (CloudTrail's calls the audit log does not account for: what `quotatop audit list` shows as OUTSIDE quotatop), per API call",
    ),
    (
        "quotatop_events_missed",
        "Changes the reconciliation (the full listing of `record --events-queue`) found that no Batch event told: a job, a status, a number of attempts, a priority (0 without --events-queue)",
    ),
    (
        "quotatop_journal_write_errors",
        "Snapshots the journal did not store (queue full or journal unavailable)",
    ),
    (
        "quotatop_journal_snapshots_written",
        "Snapshots the journal stored",
    ),
    (
        "quotatop_journal_store_errors",
        "Tries to reach the shared store that failed (authentication refused, connection refused, a query of the recorders' lead failed); while it fails the recorder records nothing and quotatop_journal_up is 0",
    ),
];

fn registry(
    snap: Option<&Snapshot>,
    journal: Option<&JournalStatus>,
    ctx: &Context,
    now: Millis,
) -> Registry {
    let mut reg = Registry::default();
    let fams = Families {
        g: GAUGES.iter().map(|(n, _)| (*n, G::default())).collect(),
        c: COUNTERS.iter().map(|(n, _)| (*n, C::default())).collect(),
    };
    // Without a journal (`record --no-journal`) its families are left out, not shown down.
    let shown = |name: &str| journal.is_some() || !name.starts_with("quotatop_journal_");
    for (name, help) in GAUGES {
        if let Some(f) = fams.g.get(name).filter(|_| shown(name)) {
            reg.register(*name, *help, f.clone());
        }
    }
    for (name, help) in COUNTERS {
        if let Some(f) = fams.c.get(name).filter(|_| shown(name)) {
            reg.register(*name, *help, f.clone());
        }
    }
    if let Some(journal) = journal {
        journal_families(&fams, journal);
    }
    for (call, n) in ctx.outside.get() {
        fams.count(
            "quotatop_outside_changes",
            labels(&[("call", &call)]),
            n as f64,
        );
    }
    if let Some(snap) = snap {
        fill(&fams, snap, ctx, now);
        fill_policy(&fams, snap, ctx);
    }
    reg
}

fn journal_families(fams: &Families, journal: &JournalStatus) {
    fams.set(
        "quotatop_journal_up",
        vec![],
        f64::from(u8::from(journal.unavailable.is_none())),
    );
    fams.count(
        "quotatop_journal_write_errors",
        vec![],
        journal.dropped as f64,
    );
    fams.count(
        "quotatop_journal_snapshots_written",
        vec![],
        journal.snapshots_written as f64,
    );
    fams.count(
        "quotatop_journal_store_errors",
        vec![],
        journal.store_errors as f64,
    );
}

/// The class policy's breaches, per queue and class (`policy check`'s count).
fn fill_policy(fams: &Families, snap: &Snapshot, ctx: &Context) {
    let region = snap.source.region.as_deref().unwrap_or("");
    for (queue, class, n) in ctx.policy.get() {
        fams.set(
            "quotatop_policy_breaches",
            labels(&[("region", region), ("queue", &queue), ("class", &class)]),
            n as f64,
        );
    }
}

fn fill(fams: &Families, snap: &Snapshot, ctx: &Context, now: Millis) {
    fill_health(fams, snap);
    for q in &snap.queues {
        let ql = QueueLabels::of(snap, q);
        if let Some(at) = q.refreshed_at {
            fams.set(
                "quotatop_data_age_seconds",
                ql.with(&[]),
                (now - at).max(0) as f64 / 1e3,
            );
        }
        fill_capacity(fams, q, ctx, &ql);
        fill_shares(fams, q, &ql);
        fill_runnable(fams, q, &ql);
        fill_preemptions(fams, q, ctx, &ql);
    }
}

/// The refresh health of each source (with `[[sources]]`: its region, a `source` label; else
/// the one source's).
fn fill_health(fams: &Families, snap: &Snapshot) {
    let region = snap.source.region.as_deref().unwrap_or("");
    let healths: Vec<(Labels, &quotatop_model::PollHealth, Millis)> = if snap.sources.is_empty() {
        vec![(labels(&[("region", region)]), &snap.health, snap.taken_at)]
    } else {
        snap.sources
            .iter()
            .map(|s| {
                let l = labels(&[
                    ("region", s.source.region.as_deref().unwrap_or("")),
                    ("source", s.name.as_str()),
                ]);
                (l, &s.health, s.taken_at.unwrap_or(snap.taken_at))
            })
            .collect()
    };
    for (l, h, taken_at) in healths {
        fams.set(
            "quotatop_last_snapshot_timestamp_seconds",
            l.clone(),
            taken_at as f64 / 1e3,
        );
        let up = matches!(h.state, HealthState::Healthy);
        fams.set("quotatop_refresh_up", l.clone(), f64::from(u8::from(up)));
        fams.set(
            "quotatop_refresh_calls_last_minute",
            l.clone(),
            f64::from(h.calls_last_minute),
        );
        fams.set(
            "quotatop_refresh_throttles_last_minute",
            l.clone(),
            f64::from(h.throttled_last_minute),
        );
        fams.set(
            "quotatop_refresh_errors_last_minute",
            l.clone(),
            f64::from(h.errors_last_minute),
        );
        fams.count("quotatop_events_missed", l, h.events_missed as f64);
    }
}

/// A queue's labels: its region and name and, with `[[sources]]`, a `source` label (each queue's
/// region is its source's; the label keeps two sources' queues of the same name apart).
struct QueueLabels(Labels);

impl QueueLabels {
    fn of(snap: &Snapshot, q: &QueueSnapshot) -> Self {
        let src = q
            .source
            .as_deref()
            .and_then(|n| snap.sources.iter().find(|s| s.name == n));
        let region = src
            .and_then(|s| s.source.region.as_deref())
            .or(snap.source.region.as_deref())
            .unwrap_or("");
        let mut l = labels(&[("region", region), ("queue", q.name.as_str())]);
        if let Some(name) = q.source.as_deref() {
            l.extend(labels(&[("source", name)]));
        }
        Self(l)
    }

    /// These labels and `rest`.
    fn with(&self, rest: &[(&str, &str)]) -> Labels {
        let mut l = self.0.clone();
        l.extend(labels(rest));
        l
    }
}

/// Capacity per share and instance type: instances and, where the type's GPUs are known, GPUs.
fn fill_capacity(fams: &Families, q: &QueueSnapshot, ctx: &Context, ql: &QueueLabels) {
    for u in share_usage(q) {
        let l = ql.with(&[("share", &u.share), ("instance_type", &u.instance_type)]);
        let per = ctx.gpus.gpus(&u.instance_type).map(f64::from);
        for (what, v) in [
            ("limit", u.limit),
            ("used", u.used),
            ("own_used", u.own_used),
            ("borrowed", u.borrowed),
            ("lent", u.lent),
            ("idle", u.idle),
        ] {
            let v = f64::from(v);
            fams.set(&format!("quotatop_capacity_{what}_instances"), l.clone(), v);
            if let Some(g) = per {
                fams.set(&format!("quotatop_capacity_{what}_gpus"), l.clone(), v * g);
            }
        }
    }
}

/// Each share's running jobs, and a 0 for every per-share count the jobs below add to (so a
/// share with none still has its series).
fn fill_shares(fams: &Families, q: &QueueSnapshot, ql: &QueueLabels) {
    for s in &q.shares {
        let ls = ql.with(&[("share", &s.name)]);
        let running = running_jobs(q, Some(&s.name)).len();
        fams.set("quotatop_running_jobs", ls.clone(), running as f64);
        for name in [
            "quotatop_misconfigured_jobs",
            "quotatop_looping_jobs",
            "quotatop_preemption_budget_breached_jobs",
        ] {
            fams.set(name, ls.clone(), 0.0);
        }
        fams.count("quotatop_preemptions", ls.clone(), 0.0);
        fams.count("quotatop_lost_gpu_seconds", ls.clone(), 0.0);
    }
}

/// Runnable jobs per share and priority band, the oldest one's age, and the misconfigured.
fn fill_runnable(fams: &Families, q: &QueueSnapshot, ql: &QueueLabels) {
    let bands: BTreeMap<String, PriorityBand> = q
        .jobs
        .iter()
        .map(|j| (j.job.id.clone(), PriorityBand::of(j.job.priority)))
        .collect();
    for j in dispatch_order(q) {
        let band = j
            .priority
            .map(PriorityBand::of)
            .or_else(|| bands.get(&j.job_id).copied())
            .unwrap_or(PriorityBand::Normal);
        let ls = ql.with(&[("share", &j.share)]);
        let mut lb = ls.clone();
        lb.push(("band".into(), band.as_str().into()));
        fams.add("quotatop_runnable_jobs", lb.clone(), 1.0);
        if let Some(w) = j.waiting_ms {
            let age = w.max(0) as f64 / 1e3;
            if let Some(f) = fams.g.get("quotatop_oldest_runnable_age_seconds") {
                let g = f.get_or_create(&lb);
                if age > g.get() {
                    g.set(age);
                }
            }
        }
        if j.misconfigured {
            fams.add("quotatop_misconfigured_jobs", ls, 1.0);
        }
    }
}

/// Preemptions, the GPU time they lost, looping jobs and jobs over their preemption budget,
/// per share.
fn fill_preemptions(fams: &Families, q: &QueueSnapshot, ctx: &Context, ql: &QueueLabels) {
    for f in preemptions(q, &ctx.rule) {
        let ls = ql.with(&[("share", &f.share)]);
        fams.count("quotatop_preemptions", ls.clone(), f64::from(f.count));
        fams.count(
            "quotatop_lost_gpu_seconds",
            ls.clone(),
            f.gpu_hours_lost.unwrap_or(0.0) * 3_600.0,
        );
        fams.add(
            "quotatop_looping_jobs",
            ls.clone(),
            f64::from(u8::from(f.looping)),
        );
        let over = f.over_budget.is_some();
        fams.add(
            "quotatop_preemption_budget_breached_jobs",
            ls,
            f64::from(u8::from(over)),
        );
    }
}

#[cfg(test)]
mod tests;
