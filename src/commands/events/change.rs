//! `events setup` and `events teardown`: what exists, the plan (only what is missing, or only
//! what setup made), a confirmation, then the calls between an intent and an outcome record
//! in the audit log.

use anyhow::{anyhow, bail};

use super::spec::{self, Current, Step};
use super::{current, failed};
use crate::cli::EventsChangeArgs;
use quotatop_aws::batch::BatchClient;
use quotatop_model::clean_text;
use quotatop_store::audit::{Action, AuditRecord, AwsContext, ChangeOrigin, Operator, Outcome};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Setup,
    Teardown,
}

impl Kind {
    fn command(self) -> &'static str {
        match self {
            Kind::Setup => "events setup",
            Kind::Teardown => "events teardown",
        }
    }
}

/// Setup's or teardown's calls from `cur`, and what teardown leaves; setup refuses a rule of
/// its name that it did not make.
fn plan(
    kind: Kind,
    cur: &Current,
    queue: &str,
    rule: &str,
) -> anyhow::Result<(Vec<Step>, Vec<String>)> {
    match kind {
        Kind::Setup => {
            if cur.rule.is_some() && !cur.rule_is_ours() {
                bail!(
                    "rule {rule} exists and was not made by events setup (its description is not {:?}): setup would take it over; rename or delete it, or use another --queue; nothing changed",
                    spec::RULE_MARKER
                );
            }
            Ok((spec::setup_steps(cur), Vec::new()))
        }
        Kind::Teardown => Ok(spec::teardown_steps(cur, queue, rule)),
    }
}

pub fn run(args: &EventsChangeArgs, kind: Kind) -> anyhow::Result<()> {
    let loaded = crate::config::load(&crate::config::Overrides {
        config_path: args.config.clone(),
        read_only: args.read_only,
        ..Default::default()
    });
    if let Some(why) = &loaded.broken {
        bail!(
            "{} changes nothing while the config file is in doubt: {}",
            kind.command(),
            clean_text(why)
        );
    }
    if loaded.config.read_only {
        bail!(
            "{}",
            loaded.read_only_refusal(kind.command(), "change anything")
        );
    }
    let queue = args.target.queue.as_str();
    let rule = spec::rule_name(queue).map_err(|e| anyhow!(e))?;
    let log =
        crate::commands::audit::open_change_log(&args.log, loaded.config.store.url.as_deref())?;
    log.check_tail()
        .map_err(|e| anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    let rt = crate::commands::runtime()?;
    rt.block_on(async {
        let client =
            BatchClient::connect(crate::commands::snapshot::connect_options(&args.target.aws)).await?;
        let cur = current(&client, queue, &rule).await?;
        let (steps, left) = plan(kind, &cur, queue, &rule)?;
        let described: Vec<String> = steps.iter().map(|s| s.describe(queue, &rule)).collect();
        let text = plan_text(kind, queue, &rule, &described, &left);
        crate::commands::print_clean_lines(&text)?;
        if steps.is_empty() || args.dry_run {
            if args.dry_run && !steps.is_empty() {
                println!("dry run: nothing changed");
            }
            return left_over(&left);
        }
        if !args.yes
            && !crate::commands::confirm(
                &format!("Make these {} call(s)?", steps.len()),
                "not on a terminal: pass --yes to confirm (or --dry-run to see the plan only); nothing changed",
            )?
        {
            println!("cancelled: nothing changed");
            return Ok(());
        }
        audited(&client, &log, args, kind, cur, &steps, &described)
            .await?;
        left_over(&left)
    })
}

/// The calls between an intent record (before the first) and an outcome record (after the
/// last, or the one that failed), the operator with the AWS principal the calls are made as.
async fn audited(
    client: &BatchClient,
    log: &quotatop_store::audit::ChangeLog,
    args: &EventsChangeArgs,
    kind: Kind,
    cur: Current,
    steps: &[Step],
    described: &[String],
) -> anyhow::Result<()> {
    let queue = args.target.queue.as_str();
    let rule = spec::rule_name(queue).map_err(|e| anyhow!(e))?;
    let mut operator = Operator::current();
    operator.aws_principal = Some(match client.caller_identity().await {
        Ok(arn) => arn,
        Err(why) => format!("unknown ({why})"),
    });
    let origin = ChangeOrigin {
        operator,
        aws: AwsContext::of(client.source(), None),
        queue: String::new(),
        justification: args
            .reason
            .clone()
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| format!("quotatop {} --queue {queue}", kind.command())),
        ..ChangeOrigin::default()
    };
    let change_id = quotatop_store::audit::new_change_id();
    let action = Action {
        call: kind.command().to_string(),
        target: format!("SQS queue {queue}, EventBridge rule {rule}"),
        detail: steps
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        run_id: None,
    };
    let intent = AuditRecord::call_intent(origin, change_id.clone(), described.join("; "), action);
    let audit_err = |e: quotatop_store::audit::AuditError| {
        anyhow!(clean_text(&quotatop_model::error_chain(&e)))
    };
    let _in_flight = log.begin_change(&change_id).map_err(audit_err)?;
    log.append(intent.clone()).map_err(audit_err)?;
    let result = carry_out(client, kind, cur, steps, queue, &rule).await;
    let outcome = match &result {
        Ok(()) => Outcome::Succeeded { request_id: None },
        Err((done, e)) => Outcome::Failed {
            error: format!(
                "after {done} of {} call(s): {}",
                steps.len(),
                clean_text(&format!("{e:#}"))
            ),
        },
    };
    log.append(AuditRecord::outcome_of(intent, outcome))
        .map_err(audit_err)?;
    let where_ = clean_text(&log.to_string());
    match result {
        Ok(()) => {
            println!(
                "done: {} call(s); recorded in {where_} (change {change_id})",
                steps.len()
            );
            Ok(())
        }
        Err((done, e)) => Err(e.context(format!(
            "{} stopped after {done} of {} call(s) (recorded in {where_}); `quotatop events status --queue {queue}` shows what exists, and running it again makes only what is missing",
            kind.command(),
            steps.len()
        ))),
    }
}

/// The plan as printed: each call, each thing teardown leaves, or that there is nothing to do.
fn plan_text(kind: Kind, queue: &str, rule: &str, described: &[String], left: &[String]) -> String {
    let mut text = format!("{} plan for queue {queue}, rule {rule}:\n", kind.command());
    for d in described {
        text.push_str(&format!("  {d}\n"));
    }
    for l in left {
        text.push_str(&format!("  left: {l}\n"));
    }
    if described.is_empty() {
        text.push_str(match kind {
            Kind::Setup => "nothing to do: the queue, the rule, its target and the policy are as setup makes them\n",
            Kind::Teardown => "nothing to remove\n",
        });
    }
    text
}

/// Teardown's refusals as the command's failure: something of setup's names is still there.
fn left_over(left: &[String]) -> anyhow::Result<()> {
    if left.is_empty() {
        Ok(())
    } else {
        bail!(
            "{} thing(s) left as they are (see above): remove them yourself if they are no longer needed",
            left.len()
        )
    }
}

/// The calls, in order; on a failure, how many were made and the error.
async fn carry_out(
    client: &BatchClient,
    kind: Kind,
    mut cur: Current,
    steps: &[Step],
    queue: &str,
    rule: &str,
) -> Result<(), (usize, anyhow::Error)> {
    for (done, step) in steps.iter().enumerate() {
        call(client, &mut cur, *step, queue, rule)
            .await
            .map_err(|e| (done, e.context(step.describe(queue, rule))))?;
    }
    // Setup reads back what it made: a call that answered but did not take is a failure.
    if kind == Kind::Setup {
        let after = current(client, queue, rule)
            .await
            .map_err(|e| (steps.len(), e))?;
        if !spec::setup_steps(&after).is_empty() {
            return Err((
                steps.len(),
                anyhow!("read back, the stream is still not as setup makes it"),
            ));
        }
    }
    Ok(())
}

/// One call, `cur` updated with what it made.
async fn call(
    client: &BatchClient,
    cur: &mut Current,
    step: Step,
    queue: &str,
    rule: &str,
) -> anyhow::Result<()> {
    let queue_url = || -> anyhow::Result<String> {
        Ok(cur
            .queue
            .as_ref()
            .ok_or_else(|| anyhow!("queue {queue} is not there"))?
            .url
            .clone())
    };
    match step {
        Step::CreateQueue => {
            let url = client.create_queue(queue).await.map_err(failed)?;
            cur.queue = Some(client.queue_state(&url).await.map_err(failed)?);
        }
        Step::PutRule => {
            client
                .put_rule(rule, &spec::pattern(), spec::RULE_MARKER)
                .await
                .map_err(failed)?;
            cur.rule = client.describe_rule(rule).await.map_err(failed)?;
        }
        Step::SetQueuePolicy => {
            let url = queue_url()?;
            let state = client.queue_state(&url).await.map_err(failed)?;
            let rule_arn = cur
                .rule
                .as_ref()
                .ok_or_else(|| anyhow!("rule {rule} is not there"))?
                .arn
                .clone();
            let policy = spec::policy_with(state.policy.as_deref(), &state.arn, &rule_arn)
                .map_err(|e| anyhow!(e))?;
            client
                .set_queue_policy(&url, &policy)
                .await
                .map_err(failed)?;
        }
        Step::PutTarget => {
            let arn = cur
                .queue
                .as_ref()
                .ok_or_else(|| anyhow!("queue {queue} is not there"))?
                .arn
                .clone();
            client
                .put_queue_target(rule, spec::TARGET_ID, &arn)
                .await
                .map_err(failed)?;
        }
        Step::RemoveTarget => client
            .remove_targets(rule, &[spec::TARGET_ID.to_string()])
            .await
            .map_err(failed)?,
        Step::DeleteRule => client.delete_rule(rule).await.map_err(failed)?,
        Step::DeleteQueue => client.delete_queue(&queue_url()?).await.map_err(failed)?,
    }
    Ok(())
}
