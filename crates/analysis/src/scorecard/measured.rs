//! Measured lost work: what a job's own checkpoints (the objects under its
//! `CheckpointConfig.S3Uri`) and its training job's logs say about each preempted attempt,
//! instead of the interval the ledger otherwise assumes. One function decides per attempt
//! ([`measure_attempt`]); the ledger, and through it the report, the console's scorecard and
//! replay, say "measured" or "modelled (interval N min)" from its answer ([`LostBasis`]).

use serde::{Deserialize, Serialize};

use quotatop_model::Millis;

use super::input::JobHistory;

/// One checkpoint seen under a job's checkpoint prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointMark {
    /// When it was written (the objects' `LastModified`).
    pub at: Millis,
    /// Its place in the job's sequence: the first number in its key below the prefix
    /// (`step-00001800/…` is 1800); `None` when the key holds none.
    pub number: Option<u64>,
    /// Bytes of its objects.
    pub bytes: u64,
}

/// What was seen of a job's checkpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainingRecord {
    /// Oldest first.
    pub checkpoints: Vec<CheckpointMark>,
    /// A listing stopped at its bound: some checkpoints may not have been seen, so nothing is
    /// measured from it.
    pub truncated: bool,
    /// The objects stored now: the last listing's (its storage and cost are attributed to the
    /// job, [`super::checkpoint_storage`]).
    #[serde(default)]
    pub stored: super::StoredObjects,
}

impl TrainingRecord {
    /// From the objects under a job's prefix (`(key below the prefix, written at, bytes)`, any
    /// order, every version seen): one checkpoint per written time and number, its objects'
    /// bytes added, oldest first. What is stored is taken to be all of them (one listing);
    /// a producer that kept older versions says what is current with [`Self::with_stored`].
    pub fn from_objects<'a>(
        objects: impl IntoIterator<Item = (&'a str, Millis, u64)>,
        truncated: bool,
    ) -> Self {
        let mut checkpoints: Vec<CheckpointMark> = Vec::new();
        let mut sizes = Vec::new();
        for (key, at, size) in objects {
            sizes.push(size);
            let number = checkpoint_number(key);
            match checkpoints
                .iter_mut()
                .find(|c| c.at == at && c.number == number)
            {
                Some(c) => c.bytes = c.bytes.saturating_add(size),
                None => checkpoints.push(CheckpointMark {
                    at,
                    number,
                    bytes: size,
                }),
            }
        }
        checkpoints.sort_by_key(|c| c.at);
        Self {
            checkpoints,
            truncated,
            stored: super::StoredObjects::of_listing(sizes, truncated),
        }
    }

    /// The same record with `stored` as the objects stored now.
    pub fn with_stored(mut self, stored: super::StoredObjects) -> Self {
        self.stored = stored;
        self
    }
}

/// The first number in `key` (a checkpoint object's key below its job's prefix).
pub fn checkpoint_number(key: &str) -> Option<u64> {
    let start = key.find(|c: char| c.is_ascii_digit())?;
    let digits: String = key[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Whether the attempt after a preemption restored the checkpoint written before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoreVerdict {
    Restored,
    /// Started from scratch: nothing written before the preemption was used.
    FromScratch,
    Unknown,
}

impl RestoreVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Restored => "restored",
            Self::FromScratch => "restarted from scratch",
            Self::Unknown => "unknown",
        }
    }
}

/// Why a restore verdict is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum RestoreEvidence {
    /// No checkpoint was written before the preemption: there was nothing to restore.
    NoCheckpoint,
    /// The first checkpoint written after the preemption has number `after`, the last before it
    /// `before`: the sequence continued (`after > before`) or started again.
    Sequence { before: u64, after: u64 },
    /// The next attempt's log said: the restore pattern found in its first lines, or not.
    Log { restored: bool },
    /// Neither a later checkpoint nor the next attempt's log says.
    None,
}

impl RestoreEvidence {
    pub fn describe(self) -> String {
        match self {
            Self::NoCheckpoint => "no checkpoint was written before the preemption".to_string(),
            Self::Sequence { before, after } if after > before => {
                format!("the next checkpoint, {after}, continues from {before}")
            }
            Self::Sequence { before, after } => {
                format!("the next checkpoint, {after}, starts again (the last before was {before})")
            }
            Self::Log { restored: true } => format!(
                "the next attempt's log says {:?}",
                quotatop_model::RESTORE_PATTERN
            ),
            Self::Log { restored: false } => format!(
                "the next attempt's first log lines do not say {:?}",
                quotatop_model::RESTORE_PATTERN
            ),
            Self::None => "no later checkpoint and no log of the next attempt yet".to_string(),
        }
    }
}

/// One preempted attempt, measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptMeasure {
    /// The attempt's progress is durable up to this instant (its progress start when nothing
    /// it made survived).
    pub saved_until: Millis,
    /// The last checkpoint written before the work stopped, if any.
    pub last_checkpoint: Option<Millis>,
    pub restore: RestoreVerdict,
    pub evidence: RestoreEvidence,
}

impl AttemptMeasure {
    /// Measured lost work: from what survived to when the work stopped.
    pub fn lost_ms(&self, work_end: Millis) -> Millis {
        (work_end - self.saved_until).max(0)
    }
}

/// Whether the attempt after attempt `i` (whose work stopped at `work_end`) restored what was
/// written before, and why. `None` when the job's checkpoints were not measured (not listed, or
/// the listing was cut at its bound).
pub fn restore_verdict(
    job: &JobHistory,
    i: usize,
    work_end: Millis,
) -> Option<(RestoreVerdict, RestoreEvidence, Option<&CheckpointMark>)> {
    let rec = job.training.as_ref().filter(|r| !r.truncated)?;
    let before = rec
        .checkpoints
        .iter()
        .filter(|c| c.at <= work_end)
        .max_by_key(|c| c.at);
    let Some(last) = before else {
        return Some((
            RestoreVerdict::FromScratch,
            RestoreEvidence::NoCheckpoint,
            None,
        ));
    };
    let after = rec
        .checkpoints
        .iter()
        .filter(|c| c.at > work_end)
        .min_by_key(|c| c.at);
    if let (Some(b), Some(a)) = (last.number, after.and_then(|c| c.number)) {
        let v = if a > b {
            RestoreVerdict::Restored
        } else {
            RestoreVerdict::FromScratch
        };
        return Some((
            v,
            RestoreEvidence::Sequence {
                before: b,
                after: a,
            },
            Some(last),
        ));
    }
    let logged = job.attempts.get(i + 1).and_then(|a| a.restored);
    Some(match logged {
        Some(restored) => (
            if restored {
                RestoreVerdict::Restored
            } else {
                RestoreVerdict::FromScratch
            },
            RestoreEvidence::Log { restored },
            Some(last),
        ),
        None => (RestoreVerdict::Unknown, RestoreEvidence::None, Some(last)),
    })
}

/// The one decision of measured lost work: attempt `i` of `job` made progress from
/// `progress_from` until its work stopped at `work_end` (the preemption signal when seen, else
/// its `stoppedAt`). Measured when the job's checkpoints were listed and the restore is known:
/// what survived is the last checkpoint before `work_end` if the next attempt restored it (never
/// before `progress_from`: the loss is bounded by the attempt's running time), else nothing.
/// `None`: modelled from the checkpoint interval.
pub fn measure_attempt(
    job: &JobHistory,
    i: usize,
    progress_from: Millis,
    work_end: Millis,
) -> Option<AttemptMeasure> {
    let (restore, evidence, last) = restore_verdict(job, i, work_end)?;
    let saved_until = match restore {
        RestoreVerdict::Restored => {
            last.map_or(progress_from, |c| c.at.clamp(progress_from, work_end))
        }
        RestoreVerdict::FromScratch => progress_from,
        RestoreVerdict::Unknown => return None,
    };
    Some(AttemptMeasure {
        saved_until,
        last_checkpoint: last.map(|c| c.at),
        restore,
        evidence,
    })
}

/// How the lost work of a job (or of every job of a total) is known: how many preempted
/// attempts were measured and how many modelled, and from which intervals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostBasis {
    pub measured_attempts: u32,
    pub modelled_attempts: u32,
    /// The shortest and longest checkpoint interval the modelled attempts assumed, ms.
    pub interval_min_ms: Option<u64>,
    pub interval_max_ms: Option<u64>,
    /// Modelled attempts with no interval known: the whole attempt counted lost.
    pub without_interval: u32,
}

impl LostBasis {
    pub fn measured() -> Self {
        Self {
            measured_attempts: 1,
            ..Self::default()
        }
    }

    pub fn modelled(interval_ms: Option<u64>) -> Self {
        Self {
            modelled_attempts: 1,
            interval_min_ms: interval_ms,
            interval_max_ms: interval_ms,
            without_interval: u32::from(interval_ms.is_none()),
            ..Self::default()
        }
    }

    pub fn merge(&mut self, o: &Self) {
        self.measured_attempts += o.measured_attempts;
        self.modelled_attempts += o.modelled_attempts;
        self.without_interval += o.without_interval;
        self.interval_min_ms = min_opt(self.interval_min_ms, o.interval_min_ms);
        self.interval_max_ms = self.interval_max_ms.max(o.interval_max_ms);
    }

    /// "modelled (interval 30 min)", "modelled (interval 5–30 min; 2 attempts without one:
    /// whole attempt)", "modelled (no checkpoint interval: whole attempt)".
    pub fn modelled_label(&self) -> String {
        self.modelled_words(None)
    }

    /// [`Self::modelled_label`] with the count of modelled attempts inside it, one
    /// parenthesis: "modelled over 7 attempts (interval 5 min; 4 of them without one: whole
    /// attempt)".
    pub fn modelled_label_over(&self, attempts: usize) -> String {
        self.modelled_words(Some(attempts))
    }

    fn modelled_words(&self, over: Option<usize>) -> String {
        let head = match over {
            Some(n) => format!("modelled over {n} attempt{}", if n == 1 { "" } else { "s" }),
            None => "modelled".to_string(),
        };
        let mins = |ms: u64| format!("{}", ms / 60_000);
        let interval = match (self.interval_min_ms, self.interval_max_ms) {
            (Some(a), Some(b)) if a == b => Some(format!("interval {} min", mins(a))),
            (Some(a), Some(b)) => Some(format!("interval {}–{} min", mins(a), mins(b))),
            _ => None,
        };
        match (interval, self.without_interval) {
            (Some(i), 0) => format!("{head} ({i})"),
            (Some(i), n) if over.is_some() => {
                format!("{head} ({i}; {n} of them without one: whole attempt)")
            }
            (Some(i), n) => format!(
                "{head} ({i}; {n} attempt{} without one: whole attempt)",
                if n == 1 { "" } else { "s" }
            ),
            (None, _) => format!("{head} (no checkpoint interval: whole attempt)"),
        }
    }

    /// The basis in words: "measured", a modelled label, both with their attempt counts, or
    /// "no preempted attempt".
    pub fn label(&self) -> String {
        match (self.measured_attempts, self.modelled_attempts) {
            (0, 0) => "no preempted attempt".to_string(),
            (_, 0) => "measured".to_string(),
            (0, _) => self.modelled_label(),
            (m, n) => format!(
                "measured ({m} attempts), {}",
                self.modelled_label_over(n as usize)
            ),
        }
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// How long a re-run spent restoring before it made progress, and how that is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreTime {
    pub ms: Millis,
    /// Measured from the attempt's own log; else modelled (the restart cost).
    pub measured: bool,
}

/// A restore measured from an attempt's `startedAt` to its logged restore line (never
/// negative: the log's clock may run behind the API's).
pub fn measured_restore_ms(started_at: Millis, restored_at: Millis) -> Millis {
    (restored_at - started_at).max(0)
}

/// The one definition of how long a restore took: attempt `i` of `job` (a re-run), measured
/// when its training job's log said it restored a checkpoint: from its `startedAt` (RUNNING) to
/// the logged restore line (never negative). Otherwise modelled: `modelled_ms`, the restart cost
/// that applies to the job. `None` for a first attempt or one that never ran.
pub fn restore_time(job: &JobHistory, i: usize, modelled_ms: Millis) -> Option<RestoreTime> {
    let a = job.attempts.get(i).filter(|_| i > 0)?;
    let started = a.started_at?;
    Some(match a.restored_at.filter(|_| a.restored == Some(true)) {
        Some(at) => RestoreTime {
            ms: measured_restore_ms(started, at),
            measured: true,
        },
        None => RestoreTime {
            ms: modelled_ms,
            measured: false,
        },
    })
}

/// The restores of re-runs after a preemption, as recovery reliability reports them: how many
/// were measured (and how long they took) and how many modelled from the restart cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreStats {
    pub measured: u32,
    pub measured_total_ms: Millis,
    pub measured_max_ms: Option<Millis>,
    pub modelled: u32,
    /// The shortest and longest restart cost the modelled restores assumed.
    pub modelled_min_ms: Option<Millis>,
    pub modelled_max_ms: Option<Millis>,
}

impl RestoreStats {
    pub fn add(&mut self, t: RestoreTime) {
        if t.measured {
            self.measured += 1;
            self.measured_total_ms = self.measured_total_ms.saturating_add(t.ms);
            self.measured_max_ms = self.measured_max_ms.max(Some(t.ms));
        } else {
            self.modelled += 1;
            self.modelled_min_ms = Some(self.modelled_min_ms.map_or(t.ms, |m| m.min(t.ms)));
            self.modelled_max_ms = self.modelled_max_ms.max(Some(t.ms));
        }
    }

    pub fn merge(&mut self, o: &Self) {
        self.measured += o.measured;
        self.measured_total_ms = self.measured_total_ms.saturating_add(o.measured_total_ms);
        self.measured_max_ms = self.measured_max_ms.max(o.measured_max_ms);
        self.modelled += o.modelled;
        self.modelled_min_ms = match (self.modelled_min_ms, o.modelled_min_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.modelled_max_ms = self.modelled_max_ms.max(o.modelled_max_ms);
    }

    /// Mean of the measured restores.
    pub fn measured_mean_ms(&self) -> Option<Millis> {
        (self.measured > 0).then(|| self.measured_total_ms / Millis::from(self.measured))
    }

    /// In words, e.g. "restore measured 1m30s mean, 2m00s max (4 re-runs); modelled 0s
    /// restart cost (3 re-runs)", or "no re-run after a preemption".
    pub fn label(&self) -> String {
        let d = |ms: Millis| quotatop_model::format_duration(ms);
        let measured = self.measured_mean_ms().map(|mean| {
            format!(
                "measured {} mean, {} max ({} re-run{})",
                d(mean),
                d(self.measured_max_ms.unwrap_or(mean)),
                self.measured,
                if self.measured == 1 { "" } else { "s" }
            )
        });
        let modelled = match (self.modelled_min_ms, self.modelled_max_ms) {
            (Some(a), Some(b)) => Some(format!(
                "modelled {} restart cost ({} re-run{})",
                if a == b {
                    d(a)
                } else {
                    format!("{}–{}", d(a), d(b))
                },
                self.modelled,
                if self.modelled == 1 { "" } else { "s" }
            )),
            _ => None,
        };
        match (measured, modelled) {
            (None, None) => "no re-run after a preemption".to_string(),
            (Some(m), None) => format!("restore {m}"),
            (None, Some(m)) => format!("restore {m}"),
            (Some(a), Some(b)) => format!("restore {a}; {b}"),
        }
    }
}

#[cfg(test)]
mod label_tests {
    use super::LostBasis;

    /// Measured and modelled attempts, some modelled without an interval: the count of the
    /// modelled ones sits inside their one parenthesis, never a second one after it.
    #[test]
    fn the_modelled_count_is_inside_its_parenthesis() {
        let b = LostBasis {
            measured_attempts: 29,
            modelled_attempts: 7,
            interval_min_ms: Some(300_000),
            interval_max_ms: Some(300_000),
            without_interval: 4,
        };
        assert_eq!(
            b.label(),
            "measured (29 attempts), modelled over 7 attempts (interval 5 min; 4 of them without \
             one: whole attempt)"
        );
        assert!(!b.label().contains(") ("), "{}", b.label());
        assert_eq!(
            b.modelled_label(),
            "modelled (interval 5 min; 4 attempts without one: whole attempt)"
        );
    }
}
