//! Where a change's records go: the audit log file on this machine, or the audit log of a
//! team's PostgreSQL store. One type, so the code that writes a change's intent and outcome
//! (`quotatop-actions`) is the same for both.

use super::shared::SessionLock;
use super::{
    AuditError, AuditLog, AuditRecord, Head, InFlight, QueueLock, StoreAuditLog, VerifyError,
};

/// The audit log a change is written to.
#[derive(Debug, Clone)]
pub enum ChangeLog {
    /// A file (flock per append, fsynced; an in-flight mark per change).
    File(AuditLog),
    /// A store's log (an advisory lock per append, in its transaction).
    Store(StoreAuditLog),
}

impl std::fmt::Display for ChangeLog {
    /// The file's path, or the store's URL without its password and the log's name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChangeLog::File(l) => write!(f, "{}", l.path().display()),
            ChangeLog::Store(s) => write!(f, "{s}"),
        }
    }
}

impl From<AuditLog> for ChangeLog {
    fn from(l: AuditLog) -> Self {
        ChangeLog::File(l)
    }
}

impl From<StoreAuditLog> for ChangeLog {
    fn from(l: StoreAuditLog) -> Self {
        ChangeLog::Store(l)
    }
}

impl ChangeLog {
    /// Appends `record` chained to the log's last one; returns it as written.
    pub fn append(&self, record: AuditRecord) -> Result<AuditRecord, AuditError> {
        match self {
            ChangeLog::File(l) => l.append(record),
            ChangeLog::Store(s) => s.append(record),
        }
    }

    /// Marks the change as being made by this process until the mark is dropped: `audit
    /// reconcile` leaves it alone meanwhile ([`Self::in_flight`]). A file's mark is a locked
    /// file beside it; a store's, a session advisory lock (seen from any machine).
    pub fn begin_change(&self, change_id: &str) -> Result<ChangeMark, AuditError> {
        match self {
            ChangeLog::File(l) => l.begin_change(change_id).map(ChangeMark::File),
            ChangeLog::Store(s) => s
                .begin_change(change_id)
                .map(|m| ChangeMark::Store(Box::new(m))),
        }
    }

    /// Whether a live process holds the change's mark ([`Self::begin_change`]).
    pub fn in_flight(&self, change_id: &str) -> Result<bool, AuditError> {
        match self {
            ChangeLog::File(l) => Ok(l.in_flight(change_id)),
            ChangeLog::Store(s) => s.in_flight(change_id),
        }
    }

    /// Every record with its position (1-based). A file's torn last line is left out (see
    /// [`Self::check_tail`]).
    pub fn read_records(&self) -> Result<Vec<(usize, AuditRecord)>, AuditError> {
        match self {
            ChangeLog::File(l) => super::read_records(l.path()),
            ChangeLog::Store(s) => s.read_records(),
        }
    }

    /// Appends `record` (an outcome) unless the log holds an outcome for its change id,
    /// decided under the log's lock: two writers never both append one. `None` when one was
    /// there.
    pub fn append_outcome_once(
        &self,
        record: AuditRecord,
    ) -> Result<Option<AuditRecord>, AuditError> {
        match self {
            ChangeLog::File(l) => l.append_outcome_once(record),
            ChangeLog::Store(s) => s.append_outcome_once(record),
        }
    }

    /// Appends `record` (an outcome) when `still` holds of the change's outcome records, read
    /// under the log's lock. `None` when it did not hold.
    pub fn append_outcome_if(
        &self,
        record: AuditRecord,
        still: impl FnOnce(&[AuditRecord]) -> bool + Send,
    ) -> Result<Option<AuditRecord>, AuditError> {
        match self {
            ChangeLog::File(l) => l.append_outcome_if(record, still),
            ChangeLog::Store(s) => s.append_outcome_if(record, still),
        }
    }

    /// The changes of `queue` that took effect, as the scorecard's exceptions take them
    /// ([`super::priority_changes`]). A file not written yet holds none.
    pub fn queue_priority_changes(
        &self,
        queue: &str,
    ) -> Result<Vec<quotatop_analysis::scorecard::PriorityChange>, AuditError> {
        if let ChangeLog::File(l) = self
            && !l.path().exists()
        {
            return Ok(Vec::new());
        }
        Ok(super::priority_changes(
            &super::changes(&self.read_records()?),
            queue,
        ))
    }

    /// Fails when the log cannot take an append: a file's torn last line (with the repair),
    /// a store that cannot be read.
    pub fn check_tail(&self) -> Result<(), AuditError> {
        match self {
            ChangeLog::File(l) => l.check_tail(),
            ChangeLog::Store(s) => s.data().map(drop),
        }
    }

    /// The chain checked ([`super::verify`]) and its head.
    pub fn verify(&self) -> Result<Head, VerifyError> {
        match self {
            ChangeLog::File(l) => super::verify(l.path()),
            ChangeLog::Store(s) => s.verify(),
        }
    }

    /// Takes the lock of `shares apply` on `queue` for as long as the guard lives: beside the
    /// file (flock), or in the store (a session advisory lock). Refused at once when held.
    pub fn lock_queue(&self, queue: &str) -> Result<QueueGuard, AuditError> {
        match self {
            ChangeLog::File(l) => l.lock_queue(queue).map(QueueGuard::File),
            ChangeLog::Store(s) => s.lock_queue(queue).map(|l| QueueGuard::Store(Box::new(l))),
        }
    }

    /// Tries the lock of priority changes to the job `job_id`, held by the guard: beside the
    /// file (flock), or in the store (a session advisory lock). `Ok(None)` while another
    /// process holds it.
    pub fn try_lock_job(&self, job_id: &str) -> Result<Option<QueueGuard>, AuditError> {
        Ok(match self {
            ChangeLog::File(l) => l.try_lock_job(job_id)?.map(QueueGuard::File),
            ChangeLog::Store(s) => s
                .try_lock_job(job_id)?
                .map(|l| QueueGuard::Store(Box::new(l))),
        })
    }

    /// How long a wait for one of the log's locks may last before failing.
    pub fn lock_timeout(&self) -> std::time::Duration {
        match self {
            ChangeLog::File(l) => l.lock_timeout(),
            ChangeLog::Store(s) => s.lock_timeout(),
        }
    }

    /// The file, when the log is one.
    pub fn file(&self) -> Option<&AuditLog> {
        match self {
            ChangeLog::File(l) => Some(l),
            ChangeLog::Store(_) => None,
        }
    }
}

/// A queue's `shares apply` lock ([`ChangeLog::lock_queue`]) or a job's priority-change lock
/// ([`ChangeLog::try_lock_job`]), released when dropped.
#[derive(Debug)]
pub enum QueueGuard {
    File(QueueLock),
    Store(Box<SessionLock>),
}

/// A change's in-flight mark ([`ChangeLog::begin_change`]), released when dropped.
#[derive(Debug)]
pub enum ChangeMark {
    File(InFlight),
    Store(Box<SessionLock>),
}
