//! `quotatop shares plan`: the diff against the live shares, the lint, and `--impact`.

use anyhow::bail;

use crate::cli::SharesPlanArgs;
use quotatop_analysis::shares_lint::{Severity, has_errors};
use quotatop_analysis::shares_plan::{Step, describe};
use quotatop_aws::batch::BatchClient;
use quotatop_model::clean_text;

use super::Prepared;

/// The quotatop config for a shares command: its warnings are errors when `strict` (a change
/// does not go ahead on settings in doubt), else printed.
pub fn load_config(
    path: Option<&std::path::Path>,
    read_only: bool,
    strict: bool,
) -> anyhow::Result<crate::config::Loaded> {
    let loaded = crate::config::load(&crate::config::Overrides {
        config_path: path.map(std::path::Path::to_path_buf),
        read_only,
        ..Default::default()
    });
    if !loaded.warnings.is_empty() {
        let text = loaded
            .warnings
            .iter()
            .map(|w| {
                w.trim_end_matches("; using defaults (changes are refused until it is fixed)")
                    .trim_end_matches("; using defaults")
                    .trim_end_matches("; ignored")
            })
            .collect::<Vec<_>>()
            .join("; ");
        if strict {
            bail!("shares apply changes nothing while its settings are in doubt: {text}");
        }
        eprintln!("warning: {}", clean_text(&text));
    }
    Ok(loaded)
}

pub fn run(args: &SharesPlanArgs) -> anyhow::Result<()> {
    let loaded = load_config(args.config.as_deref(), false, false)?;
    let opts = loaded.config.scorecard_options().1;
    let rt = super::super::runtime()?;
    let p = rt.block_on(async {
        let client =
            BatchClient::connect(super::super::snapshot::connect_options(&args.aws)).await?;
        super::prepare(&client, args, &opts).await
    })?;
    print_lines(&render(&p, &args.file.display().to_string()));
    if has_errors(&p.findings) {
        bail!(
            "{}: {} lint error(s); nothing would be applied",
            args.file.display(),
            count(&p, Severity::Error)
        );
    }
    if let Some(window) = &args.impact {
        let text = super::impact::impact(
            &p,
            &args.file,
            args.journal.as_deref(),
            window,
            &opts,
            loaded.config.rules(),
        )?;
        print_lines(&format!("\n{text}"));
    }
    Ok(())
}

/// Every line through the one cleaner (names come from files and the API).
pub fn print_lines(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    for line in text.lines() {
        // A closed pipe (`| head`) ends the output, not the command.
        if writeln!(out, "{}", clean_text(line)).is_err() {
            return;
        }
    }
}

fn count(p: &Prepared, s: Severity) -> usize {
    p.findings.iter().filter(|f| f.severity == s).count()
}

/// The plan as printed: one block per call, field by field; the unchanged shares; the lint.
pub fn render(p: &Prepared, file: &str) -> String {
    let proposed = p.file.shares.len();
    let mut out = format!(
        "Plan for job queue {}: {} live share(s), {proposed} in {file}\n",
        p.live.queue,
        p.live.shares.len()
    );
    if p.file.shares.iter().any(Result::is_err) {
        out.push_str("\nNo plan: some entries of the file could not be read (see the lint).\n");
    } else if p.steps.is_empty() {
        out.push_str("\nNo changes: the live shares match the file.\n");
    } else {
        out.push('\n');
        for (i, s) in p.steps.iter().enumerate() {
            out.push_str(&step_text(i + 1, s));
        }
    }
    let touched: Vec<&str> = p.steps.iter().map(Step::share).collect();
    let same: Vec<&str> = p
        .live
        .shares
        .iter()
        .map(|s| s.share.name.as_str())
        .filter(|n| !touched.contains(n))
        .collect();
    if !same.is_empty() && !p.steps.is_empty() {
        out.push_str(&format!("\nUnchanged: {}\n", same.join(", ")));
    }
    out.push_str(&format!(
        "\nLint: {} error(s), {} warning(s)\n",
        count(p, Severity::Error),
        count(p, Severity::Warning)
    ));
    for f in &p.findings {
        out.push_str(&format!("  {}\n", f.line()));
    }
    out
}

fn step_text(n: usize, s: &Step) -> String {
    match s {
        Step::Create(share) => format!(
            "{n}. create {} (CreateQuotaShare)\n     {}\n",
            share.name,
            describe(share)
        ),
        Step::Update { fields, .. } => {
            let mut t = format!("{n}. update {} (UpdateQuotaShare)\n", s.share());
            for f in fields {
                t.push_str(&format!(
                    "     {:<18} {} -> {}\n",
                    f.field, f.before, f.after
                ));
            }
            t
        }
        Step::Disable(_) => format!(
            "{n}. disable {} (UpdateQuotaShare state ENABLED -> DISABLED: it takes no new jobs; not in the file)\n",
            s.share()
        ),
        Step::Delete(share) => format!(
            "{n}. delete {} (DeleteQuotaShare: its jobs are terminated; needs --allow-delete)\n     was {}\n",
            s.share(),
            describe(share)
        ),
    }
}
