//! The rules every door of this binary hands to the one check, `quotatop_analysis::gate::judge`:
//! read-only mode, the config's `[priority]`, and the class policy — `policy.toml` beside the
//! config file, or the file a command was given for its world (the demo's). Built here once per
//! command, so the console's dialogs, its bulk actions, its change runner and the command line
//! judge a change by the same rules.

use std::sync::Arc;

use quotatop_analysis::gate::{Classes, Door, Rules, Stamp};
use quotatop_store::audit::{ClassPolicy, Operator};

use crate::config::Loaded;

/// The rules a change is judged by. `read_only` is the refusal's words when changes are off
/// (the door says how read-only was set).
pub fn rules(loaded: &Loaded, read_only: Option<String>) -> Rules {
    let broken = loaded.broken.as_ref().map(|why| {
        format!("the config file cannot be used ({why}): changes are refused until it is fixed")
    });
    Rules {
        read_only: read_only.or(broken),
        priority: loaded.config.priority,
        classes: classes(loaded),
    }
}

/// The class policy in force: the command's own ([`Loaded::policy_file`], the demo's), else
/// `policy.toml` beside the config file; none when that does not exist;
/// [`Classes::Unreadable`] (every change refused) when it cannot be read.
pub fn classes(loaded: &Loaded) -> Classes {
    let beside = || {
        super::policy_path(&super::PolicyFileArgs {
            policy: None,
            config: loaded.path.clone(),
        })
        .filter(|p| p.exists())
    };
    let Some(path) = loaded.policy_file.clone().or_else(beside) else {
        return Classes::None;
    };
    match quotatop_policy::read(&path) {
        Ok(p) => Classes::Policy(Arc::new(p)),
        Err(e) => Classes::Unreadable(quotatop_model::clean_text(&quotatop_model::error_chain(&e))),
    }
}

/// The names a policy may know `operator` by: the OS user, `user@host` and, when known, the AWS
/// principal's ARN.
pub fn who_names(operator: &Operator) -> Vec<String> {
    let mut who = vec![
        operator.user.clone(),
        format!("{}@{}", operator.user, operator.host),
    ];
    who.extend(operator.aws_principal.clone());
    who
}

/// A console's door: `rules` judged for `operator`.
pub fn door(rules: Rules, operator: &Operator) -> Door {
    Door {
        rules,
        who: who_names(operator),
    }
}

/// The audit's class stamp of an allowed change.
pub fn stamp(s: Stamp) -> ClassPolicy {
    ClassPolicy {
        hash: s.policy_hash,
        class_before: Some(s.class_before),
        class_after: Some(s.class_after),
        approved_by: None,
    }
}

/// Whether the AWS principal is worth asking for before judging: only a class policy can name
/// operators by it.
pub fn needs_principal(rules: &Rules) -> bool {
    matches!(rules.classes, Classes::Policy(_))
}
