//! Checks of a scenario file beyond its shape: names, ranges, references, durations.

use quotatop_model::SharingStrategy;

use super::error::EmulatorError;
use super::scenario::{GeneratorSpec, Scenario, ScriptedJob, ShareSpec, valid_resource_name};

/// The fastest simulated clock: an hour per real second. Faster, a workload's arrivals and the
/// poller's refreshes no longer keep up, and a day's jobs pile up in seconds.
pub const MAX_SPEED: f64 = 3_600.0;
/// The most arrivals a generator may have per simulated hour (ten a second).
pub const MAX_ARRIVALS_PER_HOUR: f64 = 36_000.0;
/// Above this rate (one a simulated second) a generator must say `max_jobs`, so an emulator left
/// running does not grow without bound.
pub const UNCAPPED_ARRIVALS_PER_HOUR: f64 = 3_600.0;

/// A simulated-clock speed the emulator cannot keep.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("speed must be a number from 0 (frozen) to {MAX_SPEED} (an hour a second), got {0}")]
pub struct SpeedError(pub f64);

/// A simulated-clock speed the emulator can keep: a number from 0 (frozen) to [`MAX_SPEED`].
pub fn check_speed(speed: f64) -> Result<(), SpeedError> {
    if speed.is_finite() && (0.0..=MAX_SPEED).contains(&speed) {
        Ok(())
    } else {
        Err(SpeedError(speed))
    }
}

impl Scenario {
    /// Each step below returns the first problem it finds; they run in this order, so a file
    /// with several problems is told about the same one first as before the split.
    pub(super) fn validate(&self) -> Result<(), EmulatorError> {
        if let Err(e) = check_speed(self.speed) {
            return scenario_err(e.to_string());
        }
        if self.capacity.is_empty() {
            return scenario_err("at least one [[capacity]] entry is required".to_string());
        }
        self.check_queue_names()?;
        self.check_delays()?;
        for s in &self.shares {
            for g in &s.generators {
                check_generator_settings(&format!("share {} generator {}", s.name, g.name), g)?;
            }
        }
        for j in &self.jobs {
            check_job(j)?;
        }
        for s in &self.shares {
            check_share_rates(s)?;
        }
        for j in &self.jobs {
            if !self.shares.iter().any(|s| s.name == j.share) {
                return scenario_err(format!("job {}: unknown share {}", j.name, j.share));
            }
        }
        Ok(())
    }

    fn check_queue_names(&self) -> Result<(), EmulatorError> {
        // The key is named: a bad name can come from any of three places in [queue].
        for (key, name) in [
            ("queue.name", &self.queue.name),
            ("queue.scheduling_policy", &self.queue.scheduling_policy),
            ("queue.service_environment", &self.queue.service_environment),
        ] {
            if !valid_resource_name(name) {
                return scenario_err(format!(
                    "{key}: invalid name {name:?}: use 1-128 letters, digits, '-' or '_'"
                ));
            }
        }
        Ok(())
    }

    fn check_delays(&self) -> Result<(), EmulatorError> {
        let d = &self.delays;
        for (key, v) in [
            ("delays.submitted_ms", d.submitted_ms),
            ("delays.pending_ms", d.pending_ms),
            ("delays.scheduled_ms", d.scheduled_ms),
            ("delays.starting_ms", d.starting_ms),
            ("delays.preemption_ms", d.preemption_ms),
            ("delays.jitter_ms", d.jitter_ms),
        ] {
            check_ms(key, v)?;
        }
        Ok(())
    }
}

fn scenario_err(message: String) -> Result<(), EmulatorError> {
    Err(EmulatorError::Scenario(message))
}

// Seconds and milliseconds within 100 years, so `× 1000` and clock sums cannot overflow.
fn check_secs(key: &str, v: u64) -> Result<(), EmulatorError> {
    // Beyond i64 is beyond 100 years too.
    quotatop_model::whole_seconds_to_millis(i64::try_from(v).unwrap_or(i64::MAX))
        .map(|_| ())
        .map_err(|why| EmulatorError::Scenario(format!("{key}: {v} {why}")))
}

fn check_ms(key: &str, v: u64) -> Result<(), EmulatorError> {
    if v > quotatop_model::MAX_INPUT_MS as u64 {
        return scenario_err(format!("{key}: {v} is beyond 100 years"));
    }
    Ok(())
}

fn check_priority(key: &str, p: i64) -> Result<(), EmulatorError> {
    if !(0..=i64::from(quotatop_model::MAX_PRIORITY)).contains(&p) {
        return scenario_err(format!("{key}: {p} is not a priority from 0 to 9999"));
    }
    Ok(())
}

/// A generator's durations, failure settings and priorities (`ctx` names it).
fn check_generator_settings(ctx: &str, g: &GeneratorSpec) -> Result<(), EmulatorError> {
    check_secs(&format!("{ctx}: duration_s[0]"), g.duration_s[0])?;
    check_secs(&format!("{ctx}: duration_s[1]"), g.duration_s[1])?;
    check_secs(&format!("{ctx}: start_s"), g.start_s)?;
    if let Some(c) = g.checkpoint_s {
        check_secs(&format!("{ctx}: checkpoint_s"), c)?;
    }
    if let Some(r) = g.restore_s {
        check_secs(&format!("{ctx}: restore_s"), r)?;
    }
    failure_settings(
        ctx,
        g.attempts,
        [("timeout_s", g.timeout_s), ("fail_after_s", g.fail_after_s)],
    )?;
    if let Some(r) = g.fail_rate
        && !(r.is_finite() && (0.0..=1.0).contains(&r))
    {
        return scenario_err(format!("{ctx}: fail_rate must be between 0 and 1, got {r}"));
    }
    if g.fail_rate.is_some_and(|r| r > 0.0) != g.fail_after_s.is_some() {
        return scenario_err(format!("{ctx}: fail_rate and fail_after_s go together"));
    }
    for p in &g.priorities {
        check_priority(&format!("{ctx}: priorities"), p.priority)?;
    }
    Ok(())
}

/// A scripted job's times, checkpoint fault, failure settings, size and priority.
fn check_job(j: &ScriptedJob) -> Result<(), EmulatorError> {
    let ctx = format!("job {}", j.name);
    check_secs(&format!("{ctx}: at_s"), j.at_s)?;
    check_secs(&format!("{ctx}: duration_s"), j.duration_s)?;
    if let Some(c) = j.checkpoint_s {
        check_secs(&format!("{ctx}: checkpoint_s"), c)?;
    }
    if let Some(r) = j.restore_s {
        check_secs(&format!("{ctx}: restore_s"), r)?;
    }
    if let Some(f) = &j.checkpoint_fault {
        if crate::training::CheckpointFault::parse(f).is_none() {
            return scenario_err(format!(
                "{ctx}: checkpoint_fault must be \"corrupt\" or \"never-restored\", got {f:?}"
            ));
        }
        if j.checkpoint_s.is_none() {
            return scenario_err(format!(
                "{ctx}: checkpoint_fault needs checkpoint_s (how often the faulty checkpoints are written)"
            ));
        }
    }
    failure_settings(
        &ctx,
        j.attempts,
        [
            ("timeout_s", j.timeout_s),
            ("max_runtime_s", j.max_runtime_s),
            ("fail_after_s", j.fail_after_s),
        ],
    )?;
    if j.fail_attempts.is_some() && j.fail_after_s.is_none() {
        return scenario_err(format!("{ctx}: fail_attempts needs fail_after_s"));
    }
    if j.instance_count == 0 {
        return scenario_err(format!("{ctx}: instance_count must be at least 1"));
    }
    check_priority(&format!("{ctx}: priority"), j.priority)
}

/// A share's strategy, and its generators' arrival rates, sizes, durations and weights.
fn check_share_rates(s: &ShareSpec) -> Result<(), EmulatorError> {
    SharingStrategy::parse(&s.strategy).ok_or_else(|| {
        EmulatorError::Scenario(format!(
            "share {}: strategy must be RESERVE, LEND or LEND_AND_BORROW, got {:?}",
            s.name, s.strategy
        ))
    })?;
    for g in &s.generators {
        let ctx = format!("share {} generator {}", s.name, g.name);
        if !(g.arrivals_per_hour.is_finite() && g.arrivals_per_hour > 0.0) {
            return scenario_err(format!("{ctx}: arrivals_per_hour must be > 0"));
        }
        if g.arrivals_per_hour > MAX_ARRIVALS_PER_HOUR {
            return scenario_err(format!(
                "{ctx}: arrivals_per_hour must be at most {MAX_ARRIVALS_PER_HOUR} (ten a second), got {}",
                g.arrivals_per_hour
            ));
        }
        if g.max_jobs.is_none() && g.arrivals_per_hour > UNCAPPED_ARRIVALS_PER_HOUR {
            return scenario_err(format!(
                "{ctx}: arrivals_per_hour {} is more than one a second: set max_jobs to bound the stream",
                g.arrivals_per_hour
            ));
        }
        if g.instance_counts.is_empty() || g.instance_counts.contains(&0) {
            return scenario_err(format!("{ctx}: instance_counts must be non-empty and >= 1"));
        }
        if g.duration_s[0] > g.duration_s[1] || g.duration_s[1] == 0 {
            return scenario_err(format!("{ctx}: duration_s must be [min, max], max > 0"));
        }
        if g.priorities
            .iter()
            .any(|p| p.weight.is_nan() || p.weight < 0.0)
            || (!g.priorities.is_empty()
                && g.priorities.iter().map(|p| p.weight).sum::<f64>() <= 0.0)
        {
            return scenario_err(format!("{ctx}: priority weights must be >= 0, sum > 0"));
        }
    }
    Ok(())
}

/// Durations of up to 100 years, in seconds (so `× 1000` cannot overflow).
const MAX_SECONDS: u64 = (quotatop_model::MAX_INPUT_MS / 1000) as u64;

/// `attempts` 1–10 and each duration between 1 s and [`MAX_SECONDS`].
fn failure_settings<const N: usize>(
    ctx: &str,
    attempts: Option<u32>,
    durations: [(&str, Option<u64>); N],
) -> Result<(), EmulatorError> {
    if let Some(a) = attempts
        && !(1..=10).contains(&a)
    {
        return Err(EmulatorError::Scenario(format!(
            "{ctx}: attempts must be between 1 and 10, got {a}"
        )));
    }
    for (key, v) in durations {
        if let Some(s) = v
            && !(1..=MAX_SECONDS).contains(&s)
        {
            return Err(EmulatorError::Scenario(format!(
                "{ctx}: {key} must be between 1 and {MAX_SECONDS} seconds, got {s}"
            )));
        }
    }
    Ok(())
}
