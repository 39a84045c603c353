//! A job's lifecycle steps: advancing through its states, completing, failing, preemption
//! completing, and moving between the queue and the misconfigured list.

use std::borrow::Cow;

use quotatop_model::{JobStatus, PreemptedAttempt};

use super::policy::{self, FailureKind, Misconfiguration};
use super::{Engine, EventReason};

impl Engine {
    /// A job's timer fired: take its next lifecycle step.
    pub(super) fn step(&mut self, j: u32) {
        let rec = self.rec(j);
        if rec.preempting.is_some() {
            self.finish_preemption(j);
            return;
        }
        match rec.status {
            JobStatus::Submitted => {
                self.set_status(j, JobStatus::Pending, EventReason::Advanced);
                let d = self.delay(self.config.delays.pending_ms);
                self.schedule(j, d);
            }
            JobStatus::Pending => {
                self.set_status(j, JobStatus::Runnable, EventReason::Advanced);
                self.enqueue(j);
            }
            JobStatus::Scheduled => {
                self.set_status(j, JobStatus::Starting, EventReason::Advanced);
                let d = self.delay(self.config.delays.starting_ms);
                self.schedule(j, d);
            }
            JobStatus::Starting => {
                self.set_status(j, JobStatus::Running, EventReason::Advanced);
                let now = self.now;
                let failed = self.failures.get(&j).map_or(0, |f| f.failed);
                let r = self.rec_mut(j);
                r.started_at = Some(now);
                r.run_since = Some(now);
                if let Some(a) = r.api.as_mut().and_then(|a| a.attempts.last_mut()) {
                    a.started_at = Some(now);
                }
                r.overhead_due = if r.preempted > 0 || failed > 0 {
                    r.restart_overhead_ms
                } else {
                    0
                };
                let (saved, overhead) = (r.saved_ms, r.overhead_due);
                if let Some(w) = r.api.as_mut().and_then(|a| a.work.last_mut()) {
                    w.running_at = Some(now);
                    w.resumed_ms = saved;
                    w.overhead_ms = overhead;
                }
                let remaining = r.work_ms.saturating_sub(r.saved_ms) + r.overhead_due;
                let after = match self.failures.get_mut(&j) {
                    Some(f) => {
                        let (after, ending) = f.spec.first_end(f.failed, remaining);
                        f.ending = ending;
                        after
                    }
                    None => remaining,
                };
                self.schedule(j, after);
            }
            JobStatus::Running => match self.failures.get(&j).and_then(|f| f.ending) {
                Some(kind) => self.fail_attempt(j, kind),
                None => self.complete(j),
            },
            JobStatus::Runnable | JobStatus::Succeeded | JobStatus::Failed => {}
        }
    }

    pub(super) fn set_status(&mut self, j: u32, to: JobStatus, reason: EventReason) {
        let from = self.rec(j).status;
        self.rec_mut(j).status = to;
        // Lean jobs are not indexed: nothing to remove, nothing to add.
        if from != to && self.by_status.remove(&(from, j)) {
            self.by_status.insert((to, j));
        }
        self.emit(j, Some(from), to, reason);
    }

    pub(super) fn complete(&mut self, j: u32) {
        let now = self.now;
        self.release(j);
        let r = self.rec_mut(j);
        if let Some(t) = r.run_since.take() {
            let ran = (now - t).max(0) as u64;
            r.run_ms += ran;
            r.overhead_ms += ran.min(r.overhead_due);
        }
        r.overhead_due = 0;
        let progress = r.work_ms - r.saved_ms;
        r.saved_ms = r.work_ms;
        r.stopped_at = Some(now);
        if let Some(w) = r.api.as_mut().and_then(|a| a.work.last_mut()) {
            w.stopped_at = Some(now);
            w.progress_ms = progress;
        }
        r.reason = Some(Cow::Borrowed("Completed"));
        if let Some(a) = r.api.as_mut().and_then(|a| a.attempts.last_mut()) {
            a.stopped_at = Some(now);
            a.status_reason = Some("Completed".to_string());
        }
        self.set_status(j, JobStatus::Succeeded, EventReason::Completed);
    }

    /// An attempt failed ([`policy`] rule 13): progress falls back to the last checkpoint, the
    /// capacity goes back, and the job is RUNNABLE again or FAILED.
    pub(super) fn fail_attempt(&mut self, j: u32, kind: FailureKind) {
        let now = self.now;
        self.stop_work(j, true);
        self.release(j);
        let reason = kind.reason();
        let retry = match self.failures.get_mut(&j) {
            Some(f) => {
                f.failed += 1;
                f.ending = None;
                policy::retry_after_failure(f.failed, f.spec.attempts.max(1), &f.spec.rules, reason)
            }
            None => false,
        };
        let r = self.rec_mut(j);
        if let Some(a) = r.api.as_mut().and_then(|a| a.attempts.last_mut()) {
            a.stopped_at = Some(now);
            a.status_reason = Some(reason.to_string());
        }
        if retry {
            r.scheduled_at = None;
            r.started_at = None;
            r.reason = None;
            self.set_status(j, JobStatus::Runnable, EventReason::AttemptFailed(kind));
            self.enqueue(j);
        } else {
            r.stopped_at = Some(now);
            r.reason = Some(Cow::Borrowed(reason));
            self.set_status(j, JobStatus::Failed, EventReason::AttemptFailed(kind));
        }
    }

    /// Ends an unfinished job FAILED (termination or share deletion).
    pub(super) fn finish_failed(&mut self, j: u32, reason: String, why: EventReason) {
        let now = self.now;
        let status = self.rec(j).status;
        if status == JobStatus::Runnable {
            self.dequeue(j);
        }
        if status.holds_capacity() {
            self.stop_work(j, false);
            self.release(j);
        }
        let r = self.rec_mut(j);
        r.generation += 1;
        r.preempting = None;
        r.stopped_at = Some(now);
        if status.holds_capacity()
            && let Some(a) = r.api.as_mut().and_then(|a| a.attempts.last_mut())
        {
            a.stopped_at = Some(now);
            a.status_reason = Some(reason.clone());
        }
        r.reason = Some(Cow::Owned(reason));
        self.set_status(j, JobStatus::Failed, why);
    }

    /// Stops the work clock of a running job. With `preempted`, progress falls back to the last
    /// checkpoint and the rest is rolled back (`rolled_back_ms`).
    pub(super) fn stop_work(&mut self, j: u32, preempted: bool) {
        let now = self.now;
        let r = self.rec_mut(j);
        let Some(t) = r.run_since.take() else {
            return;
        };
        let ran = (now - t).max(0) as u64;
        r.run_ms += ran;
        // The first part of an attempt after a preemption is restart overhead, not progress.
        let overhead = ran.min(r.overhead_due);
        r.overhead_ms += overhead;
        r.overhead_due = 0;
        let ran = ran - overhead;
        let progress = (r.saved_ms + ran).min(r.work_ms) - r.saved_ms;
        if let Some(w) = r.api.as_mut().and_then(|a| a.work.last_mut()) {
            w.stopped_at = Some(now);
            w.progress_ms = progress;
        }
        if !preempted {
            return;
        }
        // `saved_ms` is always a multiple of the checkpoint interval (or 0 without one), so the
        // last checkpoint is never before it.
        let total = (r.saved_ms + ran).min(r.work_ms);
        let saved = r.checkpoint_ms.map_or(0, |c| total / c * c);
        r.rolled_back_ms += total - saved;
        r.saved_ms = saved;
        if let Some(w) = r.api.as_mut().and_then(|a| a.work.last_mut()) {
            w.rolled_back_ms = total - saved;
        }
    }

    /// Gives back the capacity a job holds.
    pub(super) fn release(&mut self, j: u32) {
        let r = self.rec(j);
        let (s, ty, count, seq) = (r.share, r.ty, r.count, r.dispatch_seq);
        let preempting = r.preempting.is_some();
        let slot = self.share_rec_mut(s).slot_mut(ty);
        slot.used -= count;
        if preempting {
            slot.releasing -= count;
        }
        slot.running.remove(&(seq, j));
        self.dirty = true;
    }

    /// A job became RUNNABLE: queue it, or park it when it can never run as configured.
    pub(super) fn enqueue(&mut self, j: u32) {
        let r = self.rec(j);
        let (s, ty, count) = (r.share, r.ty, r.count);
        match self.misconfiguration_of(s, ty, count) {
            Some(m) => {
                self.share_rec_mut(s).misconfigured.insert(j);
                self.mark_misconfigured(j, m);
            }
            None => {
                let key = self.rec(j).queue_key(j);
                self.share_rec_mut(s).slot_mut(ty).queue.insert(key);
                self.dirty = true;
            }
        }
    }

    pub(super) fn dequeue(&mut self, j: u32) {
        let r = self.rec(j);
        let (key, s, ty) = (r.queue_key(j), r.share, r.ty);
        let share = self.share_rec_mut(s);
        share.slot_mut(ty).queue.remove(&key);
        share.misconfigured.remove(&j);
    }

    pub(super) fn mark_misconfigured(&mut self, j: u32, m: Misconfiguration) {
        let r = self.rec_mut(j);
        if r.misconfigured == Some(m) {
            return;
        }
        r.misconfigured = Some(m);
        r.reason = Some(Cow::Borrowed(m.reason()));
        self.emit(
            j,
            Some(JobStatus::Runnable),
            JobStatus::Runnable,
            EventReason::Misconfigured(m),
        );
    }

    pub(super) fn misconfiguration_of(
        &self,
        s: usize,
        ty: usize,
        count: u32,
    ) -> Option<Misconfiguration> {
        let share = self.share_rec(s);
        let lendable: u64 = self
            .shares
            .iter()
            .enumerate()
            .filter(|(i, o)| *i != s && !o.deleted && o.spec.sharing.strategy.lends())
            .map(|(_, o)| o.slot(ty).own as u64)
            .sum();
        policy::misconfiguration(
            count,
            share.slot(ty).own,
            &share.spec.sharing,
            lendable,
            self.env_of(ty),
        )
    }

    /// After any share change: move RUNNABLE jobs between the queues and the misconfigured lists.
    pub(super) fn reevaluate_misconfigurations(&mut self) {
        let runnable: Vec<u32> = (0..self.jobs.len() as u32)
            .filter(|&j| {
                let r = self.rec(j);
                r.status == JobStatus::Runnable && !self.share_rec(r.share).deleted
            })
            .collect();
        for j in runnable {
            let r = self.rec(j);
            let (s, ty, count, was) = (r.share, r.ty, r.count, r.misconfigured);
            let now = self.misconfiguration_of(s, ty, count);
            match (was, now) {
                (None, None) => {}
                (Some(_), Some(m)) => self.mark_misconfigured(j, m),
                (None, Some(m)) => {
                    self.dequeue(j);
                    self.share_rec_mut(s).misconfigured.insert(j);
                    self.mark_misconfigured(j, m);
                }
                (Some(_), None) => {
                    self.share_rec_mut(s).misconfigured.remove(&j);
                    let r = self.rec_mut(j);
                    r.misconfigured = None;
                    r.reason = None;
                    let key = r.queue_key(j);
                    self.share_rec_mut(s).slot_mut(ty).queue.insert(key);
                    self.emit(
                        j,
                        Some(JobStatus::Runnable),
                        JobStatus::Runnable,
                        EventReason::Reconfigured,
                    );
                }
            }
        }
    }

    /// Completes an in-progress preemption: the capacity goes back, the attempt is recorded,
    /// and the job is requeued or fails when its retries are exhausted.
    pub(super) fn finish_preemption(&mut self, j: u32) {
        let now = self.now;
        self.release(j);
        let window = self.config.recent_preemptions;
        let r = self.rec_mut(j);
        let Some(kind) = r.preempting.take() else {
            return;
        };
        r.preempted += 1;
        // Its start as the API gives it: when it began RUNNING, none if it never did (it held
        // capacity from `scheduledAt`, but ran for no time).
        let start = r.started_at;
        if let Some(api) = r.api.as_mut() {
            let resource = api
                .attempts
                .last()
                .map(|a| a.resource_id.clone())
                .unwrap_or_default();
            if let Some(a) = api.attempts.last_mut() {
                a.stopped_at = Some(now);
                a.status_reason = Some(kind.reason().to_string());
            }
            api.recent.push_front(PreemptedAttempt {
                resource_id: resource,
                started_at: start,
                stopped_at: now,
                status_reason: kind.reason().to_string(),
            });
            api.recent.truncate(window.max(1));
        }
        let exhausted = r.retries.is_some_and(|n| r.preempted > n);
        if exhausted {
            // The job ends with its last attempt: its scheduledAt and startedAt stay.
            let count = r.preempted;
            r.stopped_at = Some(now);
            r.reason = Some(Cow::Owned(policy::retries_exhausted_reason(count)));
            self.set_status(j, JobStatus::Failed, EventReason::RetriesExhausted);
        } else {
            // Waiting again: the next attempt has neither been scheduled nor started.
            r.scheduled_at = None;
            r.started_at = None;
            r.reason = None;
            self.set_status(j, JobStatus::Runnable, EventReason::Preempted(kind));
            self.enqueue(j);
        }
    }
}
