//! `quotatop events setup|status|teardown`: Batch's event stream into an SQS queue, made,
//! shown and removed the way quotatop's other changes are (plan, confirmation, audit).

mod change;
pub mod spec;
mod status;

use anyhow::anyhow;

use crate::cli::EventsCommand;
use quotatop_aws::batch::{BatchClient, BatchError, ErrorKind};

pub fn run(cmd: &EventsCommand) -> anyhow::Result<()> {
    match cmd {
        EventsCommand::Setup(a) => change::run(a, change::Kind::Setup),
        EventsCommand::Teardown(a) => change::run(a, change::Kind::Teardown),
        EventsCommand::Status(a) => status::run(a),
    }
}

/// What exists under setup's names: the queue (with its attributes), the rule and its targets.
async fn current(client: &BatchClient, queue: &str, rule: &str) -> anyhow::Result<spec::Current> {
    let queue = match client.queue_url(queue).await.map_err(failed)? {
        Some(url) => Some(client.queue_state(&url).await.map_err(failed)?),
        None => None,
    };
    let rule_state = client.describe_rule(rule).await.map_err(failed)?;
    let targets = if rule_state.is_some() {
        client.rule_targets(rule).await.map_err(failed)?
    } else {
        Vec::new()
    };
    Ok(spec::Current {
        queue,
        rule: rule_state,
        targets,
    })
}

/// The permissions the event stream's commands need, for the message of a refused call.
const PERMISSIONS: &str = "sqs:CreateQueue, sqs:GetQueueUrl, sqs:GetQueueAttributes, sqs:SetQueueAttributes, sqs:DeleteQueue, sqs:ReceiveMessage, sqs:DeleteMessage, events:PutRule, events:DescribeRule, events:DeleteRule, events:PutTargets, events:ListTargetsByRule, events:RemoveTargets";

/// A failed call, with what to do next.
fn failed(e: BatchError) -> anyhow::Error {
    let next = match e.kind() {
        ErrorKind::Denied => {
            format!("the credentials may not make this call; the event stream needs {PERMISSIONS}")
        }
        ErrorKind::NoCredentials => "set credentials (AWS_PROFILE or --profile)".to_string(),
        ErrorKind::Expired => {
            "the credentials have expired: refresh them (e.g. `aws sso login`), then run it again"
                .to_string()
        }
        ErrorKind::Unreachable => {
            "check --region and --endpoint-url (or AWS_ENDPOINT_URL), then run it again".to_string()
        }
        ErrorKind::Throttled => "wait a minute and run it again".to_string(),
        ErrorKind::NotFound | ErrorKind::Other => {
            "run it again; `quotatop events status` shows what exists".to_string()
        }
    };
    anyhow!("{}; {next}", quotatop_model::clean_text(&e.to_string()))
}
