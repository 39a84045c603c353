//! CreateQuotaShare, UpdateQuotaShare, DescribeQuotaShare, ListQuotaShares, DeleteQuotaShare.

use axum::response::Response;

use quotatop_engine::ShareUpdate;
use quotatop_model::{
    CapacityLimit, InSharePreemption, QuotaShare, ShareState, SharingConfig, SharingStrategy,
    UNLIMITED_BORROW,
};

use super::error::ApiError;
use super::ops_tags::validate_tags;
use super::paging;
use super::scenario::valid_job_or_share_name;
use super::state::QueueWorld;
use super::wire::{
    self, CapacityLimitJson, CreateQuotaShareRequest, ListQuotaSharesRequest, QuotaShareArnRequest,
    QuotaShareDetail, QuotaShareNameArn, SharePreemptionJson, SharingJson, UpdateQuotaShareRequest,
    ok, parse, required, required_str,
};

pub fn create(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    let req: CreateQuotaShareRequest = parse(body)?;
    let name = required_str(req.quota_share_name, "quotaShareName")?;
    if !valid_job_or_share_name(&name) {
        return Err(ApiError::client(format!(
            "Invalid quotaShareName {:?}: use up to 128 letters, digits, '-' or '_', starting with a letter or digit",
            quotatop_model::clean(&name)
        )));
    }
    let queue = required_str(req.job_queue, "jobQueue")?;
    world.check_queue(&queue)?;
    world.check_settled()?;
    let limits = limits(required(req.capacity_limits, "capacityLimits")?)?;
    for l in &limits {
        world.note_instance_type(&l.instance_type);
    }
    let mut sharing = sharing(required(
        req.resource_sharing_configuration,
        "resourceSharingConfiguration",
    )?)?;
    if sharing.strategy.borrows() && sharing.borrow_limit.is_none() {
        sharing.borrow_limit = Some(UNLIMITED_BORROW);
    }
    let preemption = in_share(required(
        req.preemption_configuration,
        "preemptionConfiguration",
    )?)?;
    let state = req.state.as_deref().map(state).transpose()?;
    if let Some(tags) = &req.tags {
        validate_tags(tags)?;
    }
    world.engine.create_share(QuotaShare {
        name: name.clone(),
        capacity_limits: limits,
        sharing,
        in_share_preemption: preemption,
        state: state.unwrap_or(ShareState::Enabled),
        status: None,
    })?;
    let arn = world.share_arn(&name);
    if let Some(tags) = req.tags.filter(|t| !t.is_empty()) {
        world.tags.insert(arn.clone(), tags);
    }
    world.after_change();
    ok(&QuotaShareNameArn {
        quota_share_name: name,
        quota_share_arn: arn,
    })
}

pub fn update(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    let req: UpdateQuotaShareRequest = parse(body)?;
    let arn = required_str(req.quota_share_arn, "quotaShareArn")?;
    let name = world.share_from_arn(&arn)?;
    let capacity_limits = req.capacity_limits.map(limits).transpose()?;
    for l in capacity_limits.iter().flatten() {
        world.note_instance_type(&l.instance_type);
    }
    let update = ShareUpdate {
        capacity_limits,
        sharing: req
            .resource_sharing_configuration
            .map(sharing)
            .transpose()?,
        in_share_preemption: req.preemption_configuration.map(in_share).transpose()?,
        state: req.state.as_deref().map(state).transpose()?,
    };
    world.engine.update_share(&name, update)?;
    world.after_change();
    ok(&QuotaShareNameArn {
        quota_share_name: name,
        quota_share_arn: arn,
    })
}

pub fn describe(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    let req: QuotaShareArnRequest = parse(body)?;
    let arn = required_str(req.quota_share_arn, "quotaShareArn")?;
    let name = world.share_from_arn(&arn)?;
    let share = world
        .engine
        .share(&name)
        .cloned()
        .ok_or_else(|| ApiError::client(format!("Quota share {arn} does not exist")))?;
    let mut detail = detail(world, &share);
    detail.tags = Some(world.tags.get(&arn).cloned().unwrap_or_default());
    ok(&detail)
}

pub fn list(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    let req: ListQuotaSharesRequest = parse(body)?;
    let queue = required_str(req.job_queue, "jobQueue")?;
    world.check_queue(&queue)?;
    let size = wire::page_size(req.max_results)?;
    let shares = world.engine.shares();
    let scope = paging::Scope::new("listquotashares", &[&world.queue_arn()]);
    let (page, next) = paging::by_offset(shares, req.next_token.as_deref(), size, &scope)?;
    let details: Vec<QuotaShareDetail> = page.iter().map(|s| detail(world, s)).collect();
    let mut out = serde_json::json!({ "quotaShares": details });
    if let Some(next) = next {
        out["nextToken"] = next.into();
    }
    ok(&out)
}

pub fn delete(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    let req: QuotaShareArnRequest = parse(body)?;
    let arn = required_str(req.quota_share_arn, "quotaShareArn")?;
    let name = world.share_from_arn(&arn)?;
    world.engine.delete_share(&name)?;
    world.tags.remove(&arn);
    world.after_change();
    wire::ok_no_body()
}

fn detail(world: &QueueWorld, share: &QuotaShare) -> QuotaShareDetail {
    QuotaShareDetail {
        quota_share_name: share.name.clone(),
        quota_share_arn: world.share_arn(&share.name),
        job_queue_arn: world.queue_arn(),
        capacity_limits: share
            .capacity_limits
            .iter()
            .map(|l| CapacityLimitJson {
                max_capacity: Some(l.max_capacity as i64),
                capacity_unit: Some(l.instance_type.clone()),
            })
            .collect(),
        resource_sharing_configuration: SharingJson {
            strategy: Some(share.sharing.strategy.as_str().to_string()),
            borrow_limit: share
                .sharing
                .strategy
                .borrows()
                .then(|| share.sharing.borrow_limit.unwrap_or(UNLIMITED_BORROW) as i64),
        },
        preemption_configuration: SharePreemptionJson {
            in_share_preemption: Some(share.in_share_preemption.as_str().to_string()),
        },
        state: share.state.as_str(),
        // Changes apply at once in the emulator, so a share is never CREATING or UPDATING.
        status: "VALID",
        tags: None,
    }
}

fn limits(raw: Vec<CapacityLimitJson>) -> Result<Vec<CapacityLimit>, ApiError> {
    if raw.is_empty() || raw.len() > quotatop_model::MAX_CAPACITY_LIMITS {
        return Err(ApiError::client(format!(
            "capacityLimits must have 1 to {} entries, got {}",
            quotatop_model::MAX_CAPACITY_LIMITS,
            raw.len()
        )));
    }
    raw.into_iter()
        .map(|l| {
            let unit = required_str(l.capacity_unit, "capacityLimits[].capacityUnit")?;
            if !quotatop_model::is_training_instance_type(&unit) {
                return Err(ApiError::client(format!(
                    "capacityUnit must be a SageMaker training instance type such as \
                     ml.p4d.24xlarge, got {:?}",
                    quotatop_model::clean(&unit)
                )));
            }
            let max = required(l.max_capacity, "capacityLimits[].maxCapacity")?;
            if !(1..=i64::from(i32::MAX)).contains(&max) {
                return Err(ApiError::client(format!(
                    "maxCapacity for {unit} must be between 1 and 2147483647, got {max}"
                )));
            }
            Ok(CapacityLimit::new(unit, max as u32))
        })
        .collect()
}

fn sharing(raw: SharingJson) -> Result<SharingConfig, ApiError> {
    let s = required_str(raw.strategy, "resourceSharingConfiguration.strategy")?;
    let strategy = SharingStrategy::parse(&s).ok_or_else(|| {
        ApiError::client(format!(
            "resourceSharingConfiguration.strategy must be RESERVE, LEND or LEND_AND_BORROW, got {s:?}"
        ))
    })?;
    let borrow_limit = raw
        .borrow_limit
        .map(|b| {
            i32::try_from(b).map_err(|_| {
                ApiError::client(format!("borrowLimit must be -1 or a percentage, got {b}"))
            })
        })
        .transpose()?;
    Ok(SharingConfig {
        strategy,
        borrow_limit,
    })
}

fn in_share(raw: SharePreemptionJson) -> Result<InSharePreemption, ApiError> {
    match required_str(
        raw.in_share_preemption,
        "preemptionConfiguration.inSharePreemption",
    )?
    .as_str()
    {
        "ENABLED" => Ok(InSharePreemption::Enabled),
        "DISABLED" => Ok(InSharePreemption::Disabled),
        other => Err(ApiError::client(format!(
            "inSharePreemption must be ENABLED or DISABLED, got {other:?}"
        ))),
    }
}

fn state(s: &str) -> Result<ShareState, ApiError> {
    match s {
        "ENABLED" => Ok(ShareState::Enabled),
        "DISABLED" => Ok(ShareState::Disabled),
        other => Err(ApiError::client(format!(
            "state must be ENABLED or DISABLED, got {other:?}"
        ))),
    }
}
