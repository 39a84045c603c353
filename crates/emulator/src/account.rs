//! The emulated AWS account: per region, its service environments, scheduling policies and
//! quota-management job queues, as a regional endpoint of AWS Batch would hold them.
//!
//! - **Regions.** A request is served by the region of its SigV4 credential scope
//!   (`Authorization: … Credential=KEY/DATE/REGION/batch/aws4_request`); an unsigned request by
//!   the home region (the emulator's `--region`, default us-east-1). The scenario's world lives in
//!   the home region; any other region starts empty, as a new regional endpoint would. At most
//!   [`MAX_REGIONS`] regions are kept.
//! - **Resources settle.** A created, updated or deleted environment or queue is CREATING,
//!   UPDATING or DELETING for [`SETTLE_MS`] of real time (plus explicit advances:
//!   [`SimClock::settle_ms`]), whatever the simulation's speed, then VALID (or gone). Changes
//!   apply at once; only the status shows the transition, so clients that wait for VALID (as
//!   the AWS user guide's setup flow does) are exercised.
//! - **One queue per environment.** AWS connects a quota-management service environment to one
//!   job queue only, so each queue has its own engine over its environment's capacity.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use quotatop_model::{CapacityLimit, Millis};

use super::bus::Bus;
use super::bus_events::{self, Caller};
use super::clock::SimClock;
use super::error::{ApiError, EmulatorError};
use super::faults::DeliveryFaults;
use super::scenario::Scenario;
use super::state::{ACCOUNT, QueueWorld};
use super::wire::{self, QuotaSharePolicyJson, Tags};

/// How long (real ms, or explicit advances of a manual clock) a created, updated or deleted
/// environment or queue stays CREATING, UPDATING or DELETING.
pub const SETTLE_MS: Millis = 1_000;
/// Regions the emulator keeps at most (each is a separate, initially empty world).
pub const MAX_REGIONS: usize = 32;
/// Service environments, scheduling policies and job queues a region holds at most (AWS's
/// default quotas are of this order), so a client cannot grow the emulator without bound.
pub const MAX_PER_KIND: usize = 50;

/// Refuses a new resource of `kind` when a region already holds [`MAX_PER_KIND`] of them.
pub fn check_room(held: usize, kind: &str) -> Result<(), ApiError> {
    if held >= MAX_PER_KIND {
        Err(ApiError::client(format!(
            "The emulator holds at most {MAX_PER_KIND} {kind} per region; delete one first"
        )))
    } else {
        Ok(())
    }
}

/// The region and account every ARN of one regional world is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArnBase {
    pub region: String,
    pub account: String,
}

impl Default for ArnBase {
    fn default() -> Self {
        Self {
            region: "us-east-1".to_string(),
            account: ACCOUNT.to_string(),
        }
    }
}

impl ArnBase {
    pub fn arn(&self, kind: &str, name: &str) -> String {
        format!(
            "arn:aws:batch:{}:{}:{kind}/{name}",
            self.region, self.account
        )
    }
}

/// A resource's passing status and since when (on the settle clock, [`SimClock::settle_ms`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub status: &'static str,
    pub since: Millis,
}

impl Transition {
    pub fn creating(now: Millis) -> Option<Self> {
        Some(Self {
            status: "CREATING",
            since: now,
        })
    }
    pub fn updating(now: Millis) -> Option<Self> {
        Some(Self {
            status: "UPDATING",
            since: now,
        })
    }
    pub fn deleting(now: Millis) -> Option<Self> {
        Some(Self {
            status: "DELETING",
            since: now,
        })
    }
}

/// The status at `now`: the transition's while it lasts, then VALID (DELETED once a deletion
/// settled).
pub fn status_at(t: Option<Transition>, now: Millis) -> &'static str {
    match t {
        Some(t) if now < t.since.saturating_add(SETTLE_MS) => t.status,
        Some(t) if t.status == "DELETING" => "DELETED",
        _ => "VALID",
    }
}

#[derive(Debug, Clone)]
pub struct Policy {
    pub name: String,
    pub arn: String,
    pub quota: Option<QuotaSharePolicyJson>,
    pub fairshare: Option<serde_json::Value>,
}

/// A SAGEMAKER_TRAINING service environment.
#[derive(Debug, Clone)]
pub struct Environment {
    pub name: String,
    pub arn: String,
    pub enabled: bool,
    pub capacity: Vec<CapacityLimit>,
    pub transition: Option<Transition>,
}

/// One region of the account.
pub struct Account {
    pub base: ArnBase,
    pub envs: Vec<Environment>,
    pub policies: Vec<Policy>,
    pub queues: Vec<QueueWorld>,
    /// Tags of environments, policies and queues (a queue keeps its jobs' and shares').
    pub tags: HashMap<String, Tags>,
    /// The simulated time of the last catch-up.
    pub now: Millis,
    /// The settle clock ([`SimClock::settle_ms`]) at the last catch-up: resources' transitions
    /// run on it.
    pub settle: Millis,
    /// Delays and seed for the engines of queues created through the API.
    pub template: Scenario,
    /// Job ids' own stream (see `EngineConfig::id_seed`).
    pub id_seed: Option<u64>,
    /// Queues created through the API so far (a re-created queue's ids differ from its
    /// predecessor's).
    pub queues_created: u64,
    /// EventBridge rules, SQS queues and CloudTrail's event history of the region.
    pub bus: Bus,
}

/// Which queue a queue-level operation addresses, read from its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// `jobQueue` (name or ARN).
    JobQueue,
    /// `jobId` (id or ARN).
    JobId,
    /// `quotaShareArn`.
    ShareArn,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Keys {
    job_queue: Option<String>,
    job_id: Option<String>,
    quota_share_arn: Option<String>,
}

impl Account {
    pub fn empty(base: ArnBase, now: Millis, template: Scenario, id_seed: Option<u64>) -> Self {
        Self {
            base,
            envs: Vec::new(),
            policies: Vec::new(),
            queues: Vec::new(),
            tags: HashMap::new(),
            now,
            settle: 0,
            template,
            id_seed,
            queues_created: 0,
            bus: Bus::new(id_seed.unwrap_or(0)),
        }
    }

    /// The scenario's world: its environment, policy and queue, VALID from the start.
    pub fn from_scenario(
        base: ArnBase,
        scenario: &Scenario,
        start_ms: Millis,
        id_seed: Option<u64>,
    ) -> Result<Self, EmulatorError> {
        let mut account = Self::empty(base, start_ms, scenario.clone(), id_seed);
        let queue = QueueWorld::from_scenario(scenario, start_ms, &account.base, id_seed)?;
        account.envs.push(Environment {
            name: scenario.queue.service_environment.clone(),
            arn: queue.settings.env_arn.clone().unwrap_or_default(),
            enabled: true,
            capacity: scenario.capacity_limits(),
            transition: None,
        });
        account.policies.push(Policy {
            name: scenario.queue.scheduling_policy.clone(),
            arn: queue.settings.policy_arn.clone(),
            quota: Some(QuotaSharePolicyJson {
                idle_resource_assignment_strategy: Some("FIFO".to_string()),
            }),
            fairshare: None,
        });
        account.queues.push(queue);
        Ok(account)
    }

    pub fn arn(&self, kind: &str, name: &str) -> String {
        self.base.arn(kind, name)
    }

    /// Brings every queue up to `t` (the settle clock to `settle`) and forgets what finished
    /// deleting.
    pub fn catch_up(&mut self, t: Millis, settle: Millis) -> Result<(), ApiError> {
        let listening = self.bus.listening();
        for q in &mut self.queues {
            q.settle = settle;
            q.publishing = listening;
            q.catch_up(t)?;
        }
        self.now = t;
        self.settle = settle;
        self.publish_pending();
        let gone = |tr: Option<Transition>| status_at(tr, settle) == "DELETED";
        let (envs, queues): (Vec<String>, Vec<String>) = (
            self.envs
                .iter()
                .filter(|e| gone(e.transition))
                .map(|e| e.arn.clone())
                .collect(),
            self.queues
                .iter()
                .filter(|q| gone(q.transition))
                .map(QueueWorld::queue_arn)
                .collect(),
        );
        for arn in envs.iter().chain(&queues) {
            self.tags.remove(arn);
        }
        self.envs.retain(|e| !gone(e.transition));
        self.queues.retain(|q| !gone(q.transition));
        Ok(())
    }

    /// Publishes the events the queues' engines produced since the last call.
    pub fn publish_pending(&mut self) {
        let now = self.now;
        for q in &mut self.queues {
            for event in q.outbox.drain(..) {
                self.bus.publish(event, now);
            }
        }
    }

    /// Records a Batch call `op` that succeeded (if CloudTrail records it) and publishes it as
    /// an "AWS API Call via CloudTrail" event.
    /// `request_id` is the id the call was answered with.
    pub fn record_call(&mut self, op: &str, caller: &Caller, body: &[u8], request_id: String) {
        let Some(name) = bus_events::recorded_name(op) else {
            return;
        };
        let ids = (self.bus.id(), request_id);
        let record = bus_events::api_call_record(&self.base, self.now, name, caller, body, ids);
        self.bus.record(record.clone());
        if self.bus.listening() {
            let event = bus_events::envelope(
                &self.base,
                self.now,
                bus_events::API_CALL,
                Vec::new(),
                record,
            );
            self.bus.publish(event, self.now);
        }
    }

    /// The queue a queue-level request addresses.
    pub fn route(&mut self, key: Key, body: &[u8]) -> Result<&mut QueueWorld, ApiError> {
        let keys: Keys = wire::parse(body)?;
        let index = match key {
            Key::JobQueue => {
                let queue = wire::required_str(keys.job_queue, "jobQueue")?;
                self.queue_index(&queue)?
            }
            Key::JobId => {
                let id = wire::required_str(keys.job_id, "jobId")?;
                self.queues
                    .iter()
                    .position(|q| q.find_job(&id).is_ok())
                    .ok_or_else(|| ApiError::client(format!("Job {id} does not exist")))?
            }
            Key::ShareArn => {
                let arn = wire::required_str(keys.quota_share_arn, "quotaShareArn")?;
                self.queues
                    .iter()
                    .position(|q| arn.starts_with(&format!("{}/quota-share/", q.queue_arn())))
                    .ok_or_else(|| {
                        if arn.starts_with("arn:") {
                            ApiError::client(format!("Quota share {arn} does not exist"))
                        } else {
                            ApiError::client(format!(
                                "Invalid quotaShareArn {arn:?}: expected {}/quota-share/<name>",
                                self.arn("job-queue", "<queue>")
                            ))
                        }
                    })?
            }
        };
        self.queues
            .get_mut(index)
            .ok_or_else(|| ApiError::Server("queue index out of range".into()))
    }

    /// Lets each queue place jobs only while it has a service environment and that
    /// environment is ENABLED (a DISABLED environment runs nothing new; running jobs finish).
    pub fn sync_dispatching(&mut self) -> Result<(), ApiError> {
        for q in &mut self.queues {
            let on = q
                .settings
                .env_arn
                .as_deref()
                .is_some_and(|arn| self.envs.iter().any(|e| e.arn == arn && e.enabled));
            q.engine.set_dispatching(on)?;
            q.after_change();
        }
        Ok(())
    }

    /// A queue by name or ARN (one being deleted counts until it is gone).
    pub fn queue_index(&self, queue: &str) -> Result<usize, ApiError> {
        self.queues
            .iter()
            .position(|q| q.is(queue))
            .ok_or_else(|| ApiError::client(format!("Job queue {queue} does not exist")))
    }

    /// An environment by name or ARN.
    pub fn env_index(&self, env: &str) -> Result<usize, ApiError> {
        self.envs
            .iter()
            .position(|e| e.name == env || e.arn == env)
            .ok_or_else(|| ApiError::client(format!("Service environment {env} does not exist")))
    }

    /// Whether `arn` names an environment, policy or queue of this region (their tags are the
    /// account's).
    pub fn owns(&self, arn: &str) -> bool {
        self.envs.iter().any(|e| e.arn == arn)
            || self.policies.iter().any(|p| p.arn == arn)
            || self.queues.iter().any(|q| q.queue_arn() == arn)
    }
}

/// Every region's world and the one simulated clock they share.
pub struct Accounts {
    pub home: String,
    pub account: String,
    pub clock: SimClock,
    regions: BTreeMap<String, Account>,
    template: Scenario,
    id_seed: Option<u64>,
    /// `http://127.0.0.1:<port>`: the base of SQS queue URLs.
    pub endpoint: String,
    /// The fault spec's delivery faults, for every region's bus.
    pub delivery: DeliveryFaults,
}

impl Accounts {
    /// The home region holds the scenario's world unless `preload` is off (`--empty`).
    pub fn new(
        scenario: &Scenario,
        preload: bool,
        clock: SimClock,
        start_ms: Millis,
        home: &str,
        account: &str,
        id_seed: Option<u64>,
    ) -> Result<Self, EmulatorError> {
        let base = ArnBase {
            region: home.to_string(),
            account: account.to_string(),
        };
        let world = if preload {
            Account::from_scenario(base, scenario, start_ms, id_seed)?
        } else {
            Account::empty(base, start_ms, scenario.clone(), id_seed)
        };
        let mut regions = BTreeMap::new();
        regions.insert(home.to_string(), world);
        Ok(Self {
            home: home.to_string(),
            account: account.to_string(),
            clock,
            regions,
            template: scenario.clone(),
            id_seed,
            endpoint: String::new(),
            delivery: DeliveryFaults::default(),
        })
    }

    /// The world of `region` (the home region's when `None`), brought up to the clock; a new
    /// region starts empty.
    pub fn region(&mut self, region: Option<&str>) -> Result<&mut Account, ApiError> {
        let now = self.clock.now();
        let settle = self.clock.settle_ms();
        let name = region.unwrap_or(&self.home).to_string();
        if !self.regions.contains_key(&name) {
            if !valid_region(&name) {
                return Err(ApiError::client(format!(
                    "The request is signed for region {:?}, which is not a region name",
                    quotatop_model::clean(&name)
                )));
            }
            if self.regions.len() >= MAX_REGIONS {
                return Err(ApiError::client(format!(
                    "The emulator serves at most {MAX_REGIONS} regions"
                )));
            }
            let base = ArnBase {
                region: name.clone(),
                account: self.account.clone(),
            };
            self.regions.insert(
                name.clone(),
                Account::empty(base, now, self.template.clone(), self.id_seed),
            );
        }
        let account = self
            .regions
            .get_mut(&name)
            .ok_or_else(|| ApiError::Server("region vanished".into()))?;
        account.bus.configure(&self.endpoint, self.delivery);
        account.catch_up(now, settle)?;
        Ok(account)
    }

    /// Brings every region up to the clock.
    pub fn catch_up(&mut self) -> Result<(), ApiError> {
        let now = self.clock.now();
        let settle = self.clock.settle_ms();
        for account in self.regions.values_mut() {
            account.bus.configure(&self.endpoint, self.delivery);
            account.catch_up(now, settle)?;
        }
        Ok(())
    }

    /// The home region's first queue (the scenario's), for tests and diagnostics.
    pub fn home_queue(&self) -> Option<&QueueWorld> {
        self.regions.get(&self.home)?.queues.first()
    }

    /// Delivery counts over every region.
    pub fn delivery_stats(&self) -> super::bus::DeliveryStats {
        let mut total = super::bus::DeliveryStats::default();
        for a in self.regions.values() {
            total.add(&a.bus.stats);
        }
        total
    }

    /// Every queue of every region.
    pub fn queues_mut(&mut self) -> impl Iterator<Item = &mut QueueWorld> {
        self.regions.values_mut().flat_map(|a| a.queues.iter_mut())
    }
}

/// `us-east-1`, `eu-west-1`, `ap-southeast-2`, `us-gov-west-1`: lowercase letters, digits and
/// hyphens, at most 32 characters, starting with a letter.
pub fn valid_region(r: &str) -> bool {
    !r.is_empty()
        && r.len() <= 32
        && r.starts_with(|c: char| c.is_ascii_lowercase())
        && r.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The region of a request's SigV4 credential scope, if it is signed.
pub fn signing_region(authorization: Option<&str>) -> Option<&str> {
    let credential = authorization?
        .split([',', ' '])
        .find_map(|part| part.trim().strip_prefix("Credential="))?;
    let mut scope = credential.split('/');
    let (_key, _date, region) = (scope.next()?, scope.next()?, scope.next()?);
    Some(region)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signing_region_comes_from_the_credential_scope() {
        let h = "AWS4-HMAC-SHA256 Credential=AKIDTEST/20260101/eu-west-1/batch/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc";
        assert_eq!(signing_region(Some(h)), Some("eu-west-1"));
        assert_eq!(signing_region(None), None);
        assert_eq!(signing_region(Some("Bearer x")), None);
        assert!(valid_region("us-gov-west-1"));
        assert!(!valid_region("EU-WEST-1"));
        assert!(!valid_region("eu west"));
    }

    #[test]
    fn a_transition_lasts_settle_ms_then_the_resource_is_valid_or_gone() {
        assert_eq!(status_at(Transition::creating(0), 999), "CREATING");
        assert_eq!(status_at(Transition::creating(0), 1_000), "VALID");
        assert_eq!(status_at(Transition::deleting(0), 500), "DELETING");
        assert_eq!(status_at(Transition::deleting(0), 1_000), "DELETED");
        assert_eq!(status_at(None, 0), "VALID");
    }
}
