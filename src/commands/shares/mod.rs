//! `quotatop shares export / plan / apply`: a queue's quota shares as a file (the replay
//! configuration's TOML shape), a field-by-field plan and lint against the live shares, the
//! impact of the change on the journal's history, and an audited apply.

pub(crate) mod apply;
mod impact;
pub(crate) mod plan;

use std::path::Path;

use anyhow::{Context, anyhow, bail};

use crate::cli::{SharesCommand, SharesExportArgs, SharesPlanArgs};
use quotatop_analysis::shares_lint::{self, Finding, LintContext};
use quotatop_analysis::shares_plan::{self, Step};
use quotatop_aws::batch::{BatchClient, LiveShare};
use quotatop_model::{CapacityLimit, QuotaShare, clean_text};
use quotatop_replay::shares_file::{self, SharesFile};

pub fn run(cmd: &SharesCommand) -> anyhow::Result<()> {
    match cmd {
        SharesCommand::Export(a) => export(a),
        SharesCommand::Plan(a) => plan::run(a),
        SharesCommand::Apply(a) => apply::run(a),
    }
}

/// A queue as the API shows it now.
pub struct Live {
    /// The queue's name (as the journal and the audit log know it).
    pub queue: String,
    pub shares: Vec<LiveShare>,
    /// The service environment's capacity limits (summed over its environments).
    pub capacity: Vec<CapacityLimit>,
}

impl Live {
    pub fn quota_shares(&self) -> Vec<QuotaShare> {
        self.shares.iter().map(|s| s.share.clone()).collect()
    }
}

/// The queue, its shares with their ARNs and its environment's capacity; an unknown queue is
/// an error naming it.
pub async fn live(client: &BatchClient, queue: &str) -> anyhow::Result<Live> {
    let info = client
        .describe_job_queues(&[queue.to_string()])
        .await?
        .into_iter()
        .find(|q| q.name == queue || q.arn == queue)
        .ok_or_else(|| anyhow!("no job queue {:?} at {}", clean_text(queue), where_(client)))?;
    let envs = client
        .describe_service_environments(&info.service_environments)
        .await?;
    let mut capacity: Vec<CapacityLimit> = Vec::new();
    for l in envs.iter().flat_map(|e| &e.capacity) {
        match capacity
            .iter_mut()
            .find(|c| c.instance_type == l.instance_type)
        {
            Some(c) => c.max_capacity = c.max_capacity.saturating_add(l.max_capacity),
            None => capacity.push(l.clone()),
        }
    }
    let shares = client.list_live_shares(queue).await?;
    Ok(Live {
        queue: info.name,
        shares,
        capacity,
    })
}

/// Where the client points: the endpoint, else the region.
fn where_(client: &BatchClient) -> String {
    let s = client.source();
    s.endpoint
        .clone()
        .or_else(|| s.region.clone())
        .unwrap_or_else(|| "AWS".to_string())
}

fn export(args: &SharesExportArgs) -> anyhow::Result<()> {
    let rt = super::runtime()?;
    let text = rt.block_on(async {
        let client = BatchClient::connect(super::snapshot::connect_options(&args.aws)).await?;
        let live = live(&client, &args.queue).await?;
        let exported = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let header = vec![
            format!(
                "Quota shares of job queue {} at {}, exported {exported}.",
                live.queue,
                where_(&client),
            ),
            "[[capacity]] is the service environment's (shares apply does not change it)."
                .to_string(),
            "Edit, then: quotatop shares plan --queue Q -f FILE; quotatop shares apply ..."
                .to_string(),
        ];
        anyhow::Ok(shares_file::write(
            // What it is once it is a file: an export, of then (not the live configuration).
            &format!("{} exported {exported}", live.queue),
            &header,
            &live.capacity,
            &live.quota_shares(),
        ))
    })?;
    // Names come from the API: no control character reaches the terminal.
    plan::print_lines(&text);
    Ok(())
}

/// The shares file at `path`; errors name the file (and the line).
pub fn read_file(path: &Path) -> anyhow::Result<SharesFile> {
    let text = quotatop_model::read_small_text(path, quotatop_model::MAX_SMALL_FILE)
        .with_context(|| format!("cannot read the shares file {}", path.display()))?;
    Ok(shares_file::parse(&text, &path.display().to_string())?)
}

/// Everything `plan` prints and `apply` acts on.
pub struct Prepared {
    pub live: Live,
    pub file: SharesFile,
    pub steps: Vec<Step>,
    pub findings: Vec<Finding>,
}

/// The lint window: `--impact`'s, else 7 days.
pub fn lint_window(args: &SharesPlanArgs) -> &str {
    args.impact.as_deref().unwrap_or("7d")
}

/// Reads the file, the live queue and (for the RESERVE check) the journal, and builds the
/// plan and the lint.
pub async fn prepare(
    client: &BatchClient,
    args: &SharesPlanArgs,
    opts: &quotatop_analysis::scorecard::ScorecardOptions,
) -> anyhow::Result<Prepared> {
    let file = read_file(&args.file)?;
    let live = live(client, &args.queue).await?;
    let window = lint_window(args);
    let mut findings = Vec::new();
    let used = match impact::shares_used(args.journal.as_deref(), &live.queue, window, opts) {
        Ok(u) => Some(u),
        Err(why) if args.journal.is_some() || args.impact.is_some() => {
            bail!("{why}")
        }
        Err(why) => {
            findings.push(Finding {
                severity: shares_lint::Severity::Warning,
                share: None,
                message: format!("RESERVE shares not checked for use: {why}"),
            });
            None
        }
    };
    let ctx = LintContext {
        environment: live.capacity.clone(),
        used: used.map(|u| (u, format!("the journal's last {window}"))),
    };
    findings.extend(shares_lint::lint(&file.shares, &ctx));
    findings.sort_by_key(|f| f.severity);
    // An entry that could not be read would otherwise plan its share's deletion: no plan
    // until the file reads whole (the lint names the entry).
    let steps = if file.shares.iter().all(Result::is_ok) {
        shares_plan::plan(&live.quota_shares(), &file.valid_shares())
    } else {
        Vec::new()
    };
    Ok(Prepared {
        live,
        file,
        steps,
        findings,
    })
}
