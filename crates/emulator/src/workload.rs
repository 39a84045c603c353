//! Workload generators: the jobs a scenario submits by itself, drawn from seeded generators so
//! the same scenario and seed always produce the same stream.

use quotatop_engine::{Engine, EngineError, FailureSpec, JobId, JobSpec, Rng};
use quotatop_model::Millis;

use super::scenario::{GeneratorSpec, PriorityWeight, Scenario};
use super::training::{CheckpointFault, Training};

/// A job the workload submits at `at`.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    pub at: Millis,
    pub spec: JobSpec,
    /// How its training job checkpoints (the engine's interval is `spec`'s).
    pub training: Training,
    /// The tags it is submitted with (the scenario's).
    pub tags: super::wire::Tags,
}

struct Stream {
    share: String,
    spec: GeneratorSpec,
    rng: Rng,
    next_at: Millis,
    emitted: u32,
}

impl Stream {
    fn mean_gap_ms(&self) -> f64 {
        3_600_000.0 / self.spec.arrivals_per_hour
    }

    /// Exponential inter-arrival time (a Poisson stream).
    fn gap(&mut self) -> Millis {
        let u = self.rng.unit();
        let gap = -(1.0 - u).ln() * self.mean_gap_ms();
        gap.clamp(1.0, 1e15) as Millis
    }

    fn draw(&mut self) -> JobSpec {
        let g = &self.spec;
        let count = g.instance_counts[self.rng.upto(g.instance_counts.len() as u64 - 1) as usize];
        let priority = pick_priority(&g.priorities, self.rng.unit());
        let span = g.duration_s[1] - g.duration_s[0];
        let duration_s = g.duration_s[0] + self.rng.upto(span);
        self.emitted += 1;
        let mut spec = JobSpec::new(
            format!("{}-{:04}", g.name, self.emitted),
            self.share.clone(),
            g.instance_type.clone(),
            count,
            duration_s.max(1) * 1000,
        )
        .priority(priority);
        spec.checkpoint_interval_ms = g.checkpoint_s.map(|s| s * 1000);
        spec.restart_overhead_ms = g.restore_s.map_or(0, |s| s * 1000);
        spec.preemption_retries = g.preemption_retries;
        // Drawn only when the generator has a failure rate, so other streams are unchanged.
        let fails = match g.fail_rate {
            Some(rate) if rate > 0.0 => self.rng.unit() < rate,
            _ => false,
        };
        spec.failures = FailureSpec::from_seconds(
            g.attempts.unwrap_or(1),
            Vec::new(),
            g.timeout_s,
            None,
            g.fail_after_s.filter(|_| fails),
            1,
        );
        spec
    }

    fn exhausted(&self) -> bool {
        self.spec.max_jobs.is_some_and(|m| self.emitted >= m)
    }
}

fn pick_priority(mix: &[PriorityWeight], u: f64) -> i64 {
    let total: f64 = mix.iter().map(|p| p.weight).sum();
    let mut x = u * total;
    for p in mix {
        if x < p.weight {
            return p.priority;
        }
        x -= p.weight;
    }
    mix.last().map_or(0, |p| p.priority)
}

/// The scenario's generators and scripted jobs, in arrival order.
pub struct Workload {
    streams: Vec<Stream>,
    scripted: Vec<Arrival>,
    next_scripted: usize,
}

impl Workload {
    /// No generators and no scripted jobs (a queue created through the API).
    pub fn none() -> Self {
        Self {
            streams: Vec::new(),
            scripted: Vec::new(),
            next_scripted: 0,
        }
    }

    pub fn new(scenario: &Scenario, start_ms: Millis) -> Self {
        let mut streams = Vec::new();
        for share in &scenario.shares {
            for spec in &share.generators {
                // Each stream has its own generator so adding one does not change the others.
                let mut seed_rng =
                    Rng::new(scenario.seed ^ (0x5EED_0000 + streams.len() as u64 * 0x9E37));
                let mut s = Stream {
                    share: share.name.clone(),
                    spec: spec.clone(),
                    rng: Rng::new(seed_rng.next_u64()),
                    next_at: 0,
                    emitted: 0,
                };
                s.next_at = start_ms + (spec.start_s * 1000) as Millis + s.gap();
                streams.push(s);
            }
        }
        let mut scripted: Vec<Arrival> = scenario
            .jobs
            .iter()
            .map(|j| {
                let mut spec = JobSpec::new(
                    j.name.clone(),
                    j.share.clone(),
                    j.instance_type.clone(),
                    j.instance_count,
                    j.duration_s.max(1) * 1000,
                )
                .priority(j.priority);
                let training = Training {
                    every_ms: j.checkpoint_s.map(|s| s * 1000),
                    fault: j
                        .checkpoint_fault
                        .as_deref()
                        .and_then(CheckpointFault::parse),
                    s3: None,
                };
                spec.checkpoint_interval_ms = training.engine_interval();
                spec.restart_overhead_ms = j.restore_s.map_or(0, |s| s * 1000);
                spec.preemption_retries = j.preemption_retries;
                spec.failures = FailureSpec::from_seconds(
                    j.attempts.unwrap_or(1),
                    Vec::new(),
                    j.timeout_s,
                    j.max_runtime_s,
                    j.fail_after_s,
                    j.fail_attempts.unwrap_or(1),
                );
                Arrival {
                    at: start_ms + (j.at_s * 1000) as Millis,
                    spec,
                    training,
                    tags: j.tags.clone(),
                }
            })
            .collect();
        scripted.sort_by_key(|a| a.at);
        Self {
            streams,
            scripted,
            next_scripted: 0,
        }
    }

    /// The earliest arrival due at or before `t`, if any (scripted jobs first on ties).
    pub fn pop_due(&mut self, t: Millis) -> Option<Arrival> {
        let scripted_at = self.scripted.get(self.next_scripted).map(|a| a.at);
        let stream = self
            .streams
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.exhausted())
            .min_by_key(|(i, s)| (s.next_at, *i))
            .map(|(i, s)| (i, s.next_at));
        match (scripted_at, stream) {
            (Some(a), Some((_, b))) if a <= b && a <= t => self.pop_scripted(),
            (Some(a), None) if a <= t => self.pop_scripted(),
            (_, Some((i, at))) if at <= t => {
                let s = &mut self.streams[i];
                let spec = s.draw();
                let gap = s.gap();
                s.next_at = at.saturating_add(gap);
                let training = Training {
                    every_ms: spec.checkpoint_interval_ms,
                    fault: None,
                    s3: None,
                };
                Some(Arrival {
                    at,
                    spec,
                    training,
                    tags: s.spec.tags.clone(),
                })
            }
            _ => None,
        }
    }

    fn pop_scripted(&mut self) -> Option<Arrival> {
        let a = self.scripted.get(self.next_scripted).cloned();
        self.next_scripted += 1;
        a
    }
}

/// Advances `engine` to `t`, submitting every arrival at its own time. `on_submit` sees each
/// accepted job; arrivals the engine refuses (a share disabled or deleted meanwhile) are skipped
/// and passed to `on_refused`.
pub fn advance(
    engine: &mut Engine,
    workload: &mut Workload,
    t: Millis,
    mut on_submit: impl FnMut(&Engine, JobId, &Arrival),
    mut on_refused: impl FnMut(&Arrival, EngineError),
) -> Result<(), EngineError> {
    while let Some(arrival) = workload.pop_due(t) {
        engine.advance_to(arrival.at.max(engine.now()))?;
        match engine.submit(arrival.spec.clone()) {
            Ok(id) => on_submit(engine, id, &arrival),
            Err(e) => on_refused(&arrival, e),
        }
    }
    engine.advance_to(t.max(engine.now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        Scenario::parse(
            r#"
            seed = 3
            [queue]
            name = "q"
            [[capacity]]
            instance_type = "ml.m5.large"
            max = 4
            [[shares]]
            name = "a"
            strategy = "LEND"
            limits = { "ml.m5.large" = 4 }
            [[shares.generators]]
            name = "g"
            arrivals_per_hour = 60.0
            instance_type = "ml.m5.large"
            instance_counts = [1, 2]
            priorities = [{ priority = 1, weight = 1 }, { priority = 9, weight = 1 }]
            duration_s = [60, 120]
            max_jobs = 10
            [[jobs]]
            at_s = 30
            share = "a"
            name = "once"
            instance_type = "ml.m5.large"
            duration_s = 10
            "#,
        )
        .unwrap()
    }

    #[test]
    fn a_faulty_checkpoint_is_written_but_never_given_to_the_engine() {
        let text = r#"
            seed = 3
            [queue]
            name = "q"
            [[capacity]]
            instance_type = "ml.m5.large"
            max = 4
            [[shares]]
            name = "a"
            strategy = "LEND"
            limits = { "ml.m5.large" = 4 }
            [[jobs]]
            at_s = 0
            share = "a"
            name = "bad"
            instance_type = "ml.m5.large"
            duration_s = 100
            checkpoint_s = 60
            checkpoint_fault = "never-restored"
            "#;
        let mut w = Workload::new(&Scenario::parse(text).unwrap(), 0);
        let a = w.pop_due(0).unwrap();
        assert_eq!(a.spec.checkpoint_interval_ms, None);
        assert_eq!(a.training.every_ms, Some(60_000));
        assert_eq!(a.training.fault, Some(CheckpointFault::NeverRestored));
        let wrong = text.replace("never-restored", "sometimes");
        assert!(Scenario::parse(&wrong).is_err());
    }

    #[test]
    fn same_seed_same_stream_in_time_order_and_capped() {
        let draw = || {
            let mut w = Workload::new(&scenario(), 0);
            std::iter::from_fn(|| w.pop_due(i64::MAX)).collect::<Vec<_>>()
        };
        let a = draw();
        assert_eq!(a, draw());
        assert_eq!(a.len(), 11);
        assert!(a.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(a.iter().any(|x| x.spec.name == "once" && x.at == 30_000));
        assert!(a.iter().any(|x| x.spec.priority == 1));
        assert!(a.iter().any(|x| x.spec.priority == 9));
        assert!(
            a.iter()
                .all(|x| (60_000..=120_000).contains(&x.spec.work_ms) || x.spec.name == "once")
        );
    }

    #[test]
    fn advance_submits_arrivals_at_their_time() {
        let s = scenario();
        let mut e = s.build_engine(0).unwrap();
        let mut w = Workload::new(&s, 0);
        let mut seen = Vec::new();
        advance(
            &mut e,
            &mut w,
            3_600_000,
            |e, id, a| seen.push((e.now(), id, a.at)),
            |_, _| {},
        )
        .unwrap();
        assert_eq!(seen.len(), 11);
        assert!(seen.iter().all(|(now, _, at)| now == at));
        assert_eq!(e.now(), 3_600_000);
    }
}
