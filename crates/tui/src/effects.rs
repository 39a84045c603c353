//! What the app asks the outside world to do, and the traits of the services that do it. The
//! app never calls the network or the disk from a key handler: it queues an [`Effect`]; the
//! event loop hands it to a service in a spawned task, and the result comes back as a message.
//! The services themselves (the journal, the audit log, the API) are built outside the console
//! (`quotatop::services`) and injected through [`Services`]; those screens' own work reads are
//! registered by type with [`super::registry::Screens::serving`] ([`ScreenServices`]).

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::scorecard::ScorecardResult;
use super::screen::Kind;
use quotatop_analysis::RecordedPreemptions;
use quotatop_analysis::gate::Act;
use quotatop_analysis::preview::Preview;
use quotatop_model::{Millis, Snapshot};

/// Why history (time travel, the preemption record, the scorecard) gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// The console keeps no journal (or there is no history service).
    #[error("no history: this console keeps no journal (--no-journal, or it could not be opened)")]
    NoHistory,
    /// The journal has not observed this queue yet.
    #[error("no history of queue {0} yet")]
    NoQueue(String),
    /// The journal could not be read (the reason).
    #[error("{0}")]
    Unavailable(String),
}

/// How an attempted change ended at the API (each one is in the audit log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeOutcome {
    Succeeded {
        request_id: Option<String>,
    },
    /// The API refused it (its error).
    Failed {
        error: String,
    },
    /// Decided later from the job's priority (the verdict, in words).
    Reconciled {
        verdict: String,
    },
}

/// Why a change could not be attempted at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangeError {
    #[error("this console has no API connection to change it")]
    NoApi,
    /// Refused before the API was called (read-only, the audit log, a stale preview: the
    /// reason).
    #[error("{0}")]
    Refused(String),
}

/// A confirmed priority change, as the dialog emits it.
#[derive(Debug, Clone)]
pub struct ChangeRequest {
    pub queue: String,
    pub justification: String,
    pub change_record: Option<String>,
    /// The preview as computed again when the operator confirmed: the call is made with it.
    pub preview: Preview,
    /// The preview the operator read and confirmed (the same decision; its figures may be
    /// older): the audit's intent records this one.
    pub confirmed: Preview,
    /// Set when the change is one of several confirmed as one action (`p` on marks).
    pub batch: Option<ChangeBatch>,
}

/// One change of several confirmed as one action: the id linking their audit intents, and
/// what this change's intent records as its preview (its move and the combined effect of the
/// whole action, the engine placing every change at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeBatch {
    pub id: String,
    pub preview: String,
}

/// How a change ended: the API's outcome (success or its error, both audited), or why it could
/// not be made at all.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeResult {
    pub job_id: String,
    pub job_name: String,
    pub new_priority: u32,
    pub result: Result<ChangeOutcome, ChangeError>,
    /// Something went wrong after the change was made (tagging the job failed).
    pub warning: Option<String>,
    /// Where the change was recorded (the audit log's path), when it was.
    pub audit_log: Option<String>,
}

/// One job a termination or a requeue applies to, as the data showed it when confirmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActJob {
    pub id: String,
    pub name: String,
    pub arn: String,
    pub share: String,
    /// Its `quotatop:class` tag, when known (the class policy reads it).
    pub class_tag: Option<String>,
    pub priority: u32,
    /// What the confirmed preview said of it (the audit intent keeps it).
    pub preview: String,
}

/// A confirmed termination or requeue of one or more jobs, as its dialog emits it: one
/// justification (and change record) for them all, one intent per job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActRequest {
    pub queue: String,
    /// [`Act::Terminate`] or [`Act::Requeue`].
    pub act: Act,
    pub jobs: Vec<ActJob>,
    pub justification: String,
    pub change_record: Option<String>,
}

/// How one job's part of an action ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobResult {
    pub job_id: String,
    pub job_name: String,
    pub result: Result<ChangeOutcome, ChangeError>,
    /// What else there is to say (a requeue: the copy's job id).
    pub detail: Option<String>,
}

/// The answer of an [`ActRequest`]: every job's result, in the request's order (none left
/// out: a job not attempted says why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActResult {
    pub act: Act,
    pub jobs: Vec<JobResult>,
    /// Where the changes were recorded (the audit log's path), when they were.
    pub audit_log: Option<String>,
}

/// Terminates and requeues jobs (the actions crate with the audit log in the console, a fake
/// in tests).
pub trait JobActions: Send + Sync {
    fn run(&self, req: ActRequest) -> BoxFuture<ActResult>;
}

/// Something for the event loop to start.
#[derive(Debug, Clone)]
pub enum Effect {
    ApplyChange(Box<ChangeRequest>),
    /// Terminate or requeue jobs.
    Act(Box<ActRequest>),
    /// Ask the poller for a refresh now.
    RefreshNow,
    /// Compute the scorecard of this queue from the journal; `as_of`: the window ends at this
    /// service time (time travel) instead of the last observation.
    ComputeScorecard {
        queue: String,
        as_of: Option<Millis>,
    },
    /// Load a recorded snapshot (time travel).
    Travel(TravelTo),
    /// Load the journal's preemption history of this queue.
    LoadPreemptions {
        queue: String,
    },
    /// Work a screen defines in its own file (see [`ScreenWork`]).
    Screen(ScreenWork),
    /// No screen of this kind is open any more: its work waiting or under way is stopped
    /// (a log pane's follow ends with the pane, and reads no page more).
    Forget(Kind),
}

/// The answer of an [`Effect`], as it comes back to the app (and from there to the screen that
/// asked).
#[derive(Debug, Clone, PartialEq)]
pub enum EffectResult {
    Change(Box<ChangeResult>),
    Act(Box<ActResult>),
    /// A scorecard, and the service time its window was asked to end at (`None`: the latest
    /// observation).
    Scorecard(Box<ScorecardResult>, Option<Millis>),
    Travel(Box<TravelResult>),
    Preemptions(Box<PreemptionHistory>),
    /// The answer to a [`ScreenWork`], for the screens of kind `screen`.
    Screen {
        screen: Kind,
        answer: ScreenAnswer,
    },
}

impl EffectResult {
    /// The answer of type `T` to work a screen of kind `screen` asked for, if this is one.
    pub fn answer<T: Any>(&self, screen: Kind) -> Option<&T> {
        match self {
            Self::Screen { screen: s, answer } if *s == screen => answer.get(),
            _ => None,
        }
    }
}

/// Blocking work a screen asks for, written in the screen's own file: it reads the service
/// of its choice from [`ScreenServices`] (`None` when the console was built without it) and
/// returns an answer of its own type, which comes back as [`EffectResult::Screen`] to the
/// screens of kind `screen`. A newer request of one screen kind cancels the older one. The
/// effect list, the runner and the app need no change for a new kind of work.
#[derive(Clone)]
pub struct ScreenWork {
    pub screen: Kind,
    /// Waited out before the work starts (a follow's pause between reads): on the runtime,
    /// where a newer request of the kind, or the console quitting, cancels it at once — not
    /// in the blocking thread, which nothing can stop.
    pub delay: Option<std::time::Duration>,
    /// Set when the work is no longer wanted (a newer request, the screen closed): work that
    /// reads page after page looks at it between pages ([`ScreenWork::cancellable`]).
    pub cancel: Cancel,
    run: Arc<WorkFn>,
}

/// What a [`ScreenWork`] runs.
type WorkFn = dyn Fn(&ScreenServices, &Cancel) -> ScreenAnswer + Send + Sync;

impl ScreenWork {
    /// Work for screen `screen`: `work` gets the service of type `S`, if there is one.
    pub fn new<S, T>(screen: Kind, work: impl Fn(Option<&S>) -> T + Send + Sync + 'static) -> Self
    where
        S: Any + Send + Sync,
        T: Any + Send + Sync,
    {
        Self::cancellable(screen, move |service: Option<&S>, _: &Cancel| work(service))
    }

    /// Work that stops early when told to: `work` also gets the [`Cancel`] the runner sets
    /// when the answer is no longer wanted.
    pub fn cancellable<S, T>(
        screen: Kind,
        work: impl Fn(Option<&S>, &Cancel) -> T + Send + Sync + 'static,
    ) -> Self
    where
        S: Any + Send + Sync,
        T: Any + Send + Sync,
    {
        Self {
            screen,
            delay: None,
            cancel: Cancel::default(),
            run: Arc::new(move |services, cancel| {
                ScreenAnswer::new(work(services.get::<S>(), cancel))
            }),
        }
    }

    /// The same work, started `delay` from now (cancelled meanwhile by a newer request of the
    /// kind, or by the console quitting).
    pub fn after(mut self, delay: Option<std::time::Duration>) -> Self {
        self.delay = delay;
        self
    }

    /// Does the work (in a blocking task of the runner).
    pub fn run(&self, services: &ScreenServices) -> EffectResult {
        EffectResult::Screen {
            screen: self.screen,
            answer: (self.run)(services, &self.cancel),
        }
    }
}

/// Whether work is still wanted: set once, seen by every clone; blocking work checks
/// [`Cancel::is_cancelled`], async work awaits [`Cancel::cancelled`].
#[derive(Clone, Default)]
pub struct Cancel(Arc<CancelState>);

#[derive(Default)]
struct CancelState {
    set: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl Cancel {
    /// The work is no longer wanted.
    pub fn cancel(&self) {
        self.0.set.store(true, std::sync::atomic::Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.set.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Ready once [`Cancel::cancel`] was called (at once when it already was).
    pub async fn cancelled(&self) {
        let notified = self.0.notify.notified();
        tokio::pin!(notified);
        // Registered before the flag is read, so a cancel in between is not missed.
        notified.as_mut().enable();
        if self.is_cancelled() {
            return;
        }
        notified.await;
    }
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cancel({})", self.is_cancelled())
    }
}

impl std::fmt::Debug for ScreenWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScreenWork({:?})", self.screen)
    }
}

/// What a [`ScreenWork`] returned; the screen takes it back by its type.
#[derive(Clone)]
pub struct ScreenAnswer(Arc<dyn Any + Send + Sync>);

impl ScreenAnswer {
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        Self(Arc::new(value))
    }

    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl std::fmt::Debug for ScreenAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScreenAnswer")
    }
}

/// The same answer (one computation, offered to each screen).
impl PartialEq for ScreenAnswer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The services screens' own work reads, one per type (a screen's service is usually an
/// `Arc<dyn ItsTrait>`, built outside the console like the others and given to
/// [`super::registry::Screens::serving`]: the only way a screen gets one).
#[derive(Clone, Default)]
pub struct ScreenServices(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl ScreenServices {
    /// These services and `service` (replacing one of its type).
    pub fn with<S: Any + Send + Sync>(mut self, service: S) -> Self {
        self.0.insert(TypeId::of::<S>(), Arc::new(service));
        self
    }

    pub fn get<S: Any + Send + Sync>(&self) -> Option<&S> {
        self.0.get(&TypeId::of::<S>())?.downcast_ref()
    }
}

/// The last audited change of a share's configuration (`quotatop shares apply`), as the Share
/// screen shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastShareChange {
    /// The intent's time (RFC 3339).
    pub time: String,
    /// `user@host`.
    pub operator: String,
    /// The API call, e.g. `UpdateQuotaShare`.
    pub call: String,
    /// What changed, e.g. `borrowLimit: 200% -> 100%`.
    pub detail: String,
    /// `succeeded`, `failed: …`, `outcome unknown`.
    pub outcome: String,
    pub change_record: Option<String>,
    pub justification: String,
}

/// Reads the audit log for a share's last configuration change; blocking (it reads a file).
pub trait ShareChangeReader: Send + Sync {
    fn last_change(
        &self,
        queue: &str,
        share: &str,
    ) -> Result<Option<LastShareChange>, ShareChangeError>;
}

/// Why a share's last configuration change is not known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareChangeError {
    /// The console runs without an audit log.
    #[error("no audit log")]
    NoLog,
    /// The audit log could not be read: what went wrong, with its causes.
    #[error("{0}")]
    Unreadable(String),
}

/// Where time travel goes, by the local clock the snapshots were stored under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TravelTo {
    /// The newest stored snapshot taken before this time.
    Older(Millis),
    /// The oldest stored snapshot taken after this time.
    Newer(Millis),
    /// The snapshot in force at this local time (else the oldest one kept).
    At(Millis),
    /// The snapshot whose data is as of this service time, the clock the data's own timestamps
    /// and the PAST badge use (else the oldest one kept).
    AtData(Millis),
}

/// A recorded snapshot, where it stands among the stored ones, and the usage samples before
/// it (a past view's sparklines: (queue, share, instance type) → instances used, oldest first).
#[derive(Debug, Clone, PartialEq)]
pub struct PastFrame {
    pub snapshot: Snapshot,
    /// 1-based position among the stored snapshots, and how many there are.
    pub position: usize,
    pub total: usize,
    pub usage: BTreeMap<(String, String, String), Vec<u32>>,
}

/// The answer of a [`TravelTo`]: a frame, `None` when there is nothing further that way.
#[derive(Debug, Clone, PartialEq)]
pub struct TravelResult {
    pub to: TravelTo,
    pub result: Result<Option<Box<PastFrame>>, HistoryError>,
}

/// The journal's preemption history of a queue.
#[derive(Debug, Clone, PartialEq)]
pub struct PreemptionHistory {
    pub queue: String,
    pub result: Result<Vec<RecordedPreemptions>, HistoryError>,
}

/// Reads history: time travel's snapshots and the Preemptions screen's record. Blocking
/// (a database), so the event loop calls it in `spawn_blocking`.
pub trait HistoryReader: Send + Sync {
    fn travel(&self, to: TravelTo) -> TravelResult;
    fn preemptions(&self, queue: &str) -> PreemptionHistory;
}

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Runs confirmed priority changes (the Batch client with the audit log in the console, a fake
/// in tests).
pub trait ChangeRunner: Send + Sync {
    fn apply(&self, req: ChangeRequest) -> BoxFuture<ChangeResult>;
}

/// The services the event loop runs the app's effects with; `None`: not available (the app
/// says so). A screen's own work ([`ScreenWork`]) reads its service from [`ScreenServices`]
/// instead, never from here.
#[derive(Default)]
pub struct Services {
    pub changes: Option<Arc<dyn ChangeRunner>>,
    /// Terminations and requeues.
    pub actions: Option<Arc<dyn JobActions>>,
    /// Asks the poller to refresh now.
    pub refresh: Option<Box<dyn Fn() + Send>>,
    /// Computes a queue's scorecard; blocking (it reads the journal), so the event loop runs it
    /// in `spawn_blocking`. `None`: no history (the screen says so).
    pub scorecard: Option<ScorecardFn>,
    /// Time travel and the Preemptions screen's history; `None`: no history.
    pub history: Option<Arc<dyn HistoryReader>>,
    /// Why the journal stopped recording, if it did (asked after each snapshot and tick, so
    /// the status bar follows a journal that breaks mid-session).
    pub journal_state: Option<JournalStateFn>,
}

/// See [`Services::journal_state`].
pub type JournalStateFn = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// Computes scorecards: of `queue`, over the window ending at service time `as_of` (`None`: the
/// queue's last observation). Blocking (it reads the journal), so the event loop calls it in
/// `spawn_blocking`. Any such closure is one.
pub trait ScorecardService: Send + Sync {
    fn compute(&self, queue: &str, as_of: Option<Millis>) -> ScorecardResult;
}

impl<F> ScorecardService for F
where
    F: Fn(&str, Option<Millis>) -> ScorecardResult + Send + Sync,
{
    fn compute(&self, queue: &str, as_of: Option<Millis>) -> ScorecardResult {
        self(queue, as_of)
    }
}

/// See [`Services::scorecard`].
pub type ScorecardFn = Arc<dyn ScorecardService>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_screens_answer_reaches_its_kind_with_its_type_only() {
        let greeter = Arc::new(String::from("hello"));
        let services = ScreenServices::default().with(greeter);
        let work = ScreenWork::new(Kind::Share, |g: Option<&Arc<String>>| {
            g.map_or(0, |g| g.len())
        });
        let answer = work.run(&services);
        assert_eq!(answer.answer::<usize>(Kind::Share), Some(&5));
        assert_eq!(answer.answer::<usize>(Kind::Jobs), None);
        assert_eq!(answer.answer::<String>(Kind::Share), None);
        // Without the service the work is told so.
        let answer = work.run(&ScreenServices::default());
        assert_eq!(answer.answer::<usize>(Kind::Share), Some(&0));
    }
}
