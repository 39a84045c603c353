use super::*;
use std::collections::HashMap;

use super::sections::DAY_MS;
use quotatop_store::journal::JournalConfig;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    // Removed when the test ends: the directory is held beside the path.
    let dir = tempfile::Builder::new()
        .prefix(&format!("quotatop-config-{name}-"))
        .tempdir()
        .unwrap();
    let p = dir.path().join("config.toml");
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

#[test]
fn defaults_when_there_is_no_file() {
    let l = load_with(
        &Overrides::default(),
        Some("/nonexistent/q/config.toml".into()),
        None,
        &env(&[]),
    );
    assert_eq!(l.config, Config::default());
    assert!(l.warnings.is_empty());
}

#[test]
fn history_sections_set_the_journal_scorecard_and_gpu_table() {
    let (_dir, p) = temp_file(
        "history",
        "[journal]\nretention_days = 30\nsnapshot_retention_days = 2\nsnapshot_interval_secs = 15\n\
         [scorecard]\nwindow_hours = 6\nrestart_cost_secs = 120\nrecovery_window_hours = 0\n\
         [scorecard.checkpoint_minutes]\nresearch = 30\n\
         [gpus]\n\"ml.x9.huge\" = 2\n\"ml.p4d.24xlarge\" = 4\n",
    );
    let l = load_with(&Overrides::default(), Some(p), None, &env(&[]));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let j = l.config.journal.config();
    assert_eq!(j.retention_ms, 30 * DAY_MS);
    assert_eq!(j.snapshot_retention_ms, 2 * DAY_MS);
    assert_eq!(j.snapshot_interval_ms, 15_000);
    // Unset: the journal's default.
    assert_eq!(
        j.usage_interval_ms,
        JournalConfig::default().usage_interval_ms
    );
    let (window, opts) = l.config.scorecard_options();
    assert_eq!(window, 6 * 3_600_000);
    assert_eq!(opts.restart_cost_ms, 120_000);
    // Zero is taken as the smallest unit, never as "nothing recovers".
    assert_eq!(opts.recovery_window_ms, 3_600_000);
    assert_eq!(opts.checkpoint_by_share["research"], 30 * 60_000);
    assert_eq!(opts.gpus.gpus("ml.x9.huge"), Some(2));
    assert_eq!(opts.gpus.gpus("ml.p4d.24xlarge"), Some(4));
    assert_eq!(opts.gpus.gpus("ml.g5.2xlarge"), Some(1));
    // Defaults match the journal's and the scorecard's own.
    assert_eq!(
        JournalSettings::default().config(),
        JournalConfig::default()
    );
    let (w, o) = Config::default().scorecard_options();
    assert_eq!((w, o), (24 * 3_600_000, ScorecardOptions::default()));

    let (_bad_dir, bad) = temp_file("history-bad", "[journal]\nretention = 3\n");
    let l = load_with(&Overrides::default(), Some(bad), None, &env(&[]));
    assert!(l.warnings[0].contains("retention"), "{:?}", l.warnings);
    assert_eq!(l.config, Config::default());
}

#[test]
fn file_then_env_then_flags() {
    let (_dir, p) = temp_file(
        "layers",
        "theme = \"light\"\nqueues = [\"a\"]\nregion = \"eu-west-1\"\nrefresh_secs = 2.0\n[keys]\nquit = [\"x\"]\n[loops]\nmin_preemptions = 5\n",
    );
    let l = load_with(&Overrides::default(), Some(p.clone()), None, &env(&[]));
    assert_eq!(l.config.theme, "light");
    assert_eq!(l.config.queues, vec!["a"]);
    assert_eq!(l.config.refresh_secs, 2.0);
    assert_eq!(l.config.keys["quit"], vec!["x"]);
    assert_eq!(l.config.loops.rule().min_preemptions, 5);

    let e = env(&[
        ("QUOTATOP_THEME", "high-contrast"),
        ("QUOTATOP_QUEUES", "b, c"),
        ("NO_COLOR", "1"),
        ("AWS_REGION", "us-west-2"),
    ]);
    let l = load_with(&Overrides::default(), Some(p.clone()), None, &e);
    assert_eq!(l.config.theme, "high-contrast");
    assert_eq!(l.config.queues, vec!["b", "c"]);
    assert!(l.config.no_color);
    assert_eq!(l.config.region.as_deref(), Some("us-west-2"));

    let flags = Overrides {
        theme: Some("colorblind".into()),
        queues: vec!["d".into()],
        region: Some("ap-south-1".into()),
        read_only: true,
        ..Overrides::default()
    };
    let l = load_with(&flags, Some(p), None, &e);
    assert_eq!(l.config.theme, "colorblind");
    assert_eq!(l.config.queues, vec!["d"]);
    assert_eq!(l.config.region.as_deref(), Some("ap-south-1"));
    assert!(l.config.read_only);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
}

#[test]
fn a_bad_file_is_reported_and_defaults_used() {
    let (_dir, p) = temp_file("bad", "theme = 3\nunknown_key = true\n");
    let l = load_with(
        &Overrides::default(),
        Some(p),
        None,
        &env(&[("QUOTATOP_THEME", "light")]),
    );
    assert_eq!(l.warnings.len(), 1);
    assert!(
        l.warnings[0].contains("bad config file"),
        "{}",
        l.warnings[0]
    );
    assert!(l.warnings[0].contains("using defaults"));
    assert_eq!(l.config.theme, "light", "the env layer still applies");
    assert_eq!(l.config.queues, Vec::<String>::new());
}

#[test]
fn an_explicit_missing_file_is_reported() {
    let flags = Overrides {
        config_path: Some("/nonexistent/x.toml".into()),
        ..Overrides::default()
    };
    let l = load_with(&flags, None, None, &env(&[]));
    assert!(
        l.warnings[0].contains("cannot read config file /nonexistent/x.toml"),
        "{:?}",
        l.warnings
    );
}

#[test]
fn bad_env_values_are_reported() {
    let l = load_with(
        &Overrides::default(),
        None,
        None,
        &env(&[("QUOTATOP_READ_ONLY", "maybe")]),
    );
    assert!(!l.config.read_only);
    assert!(l.warnings[0].contains("QUOTATOP_READ_ONLY=maybe"));
    let flags = Overrides {
        refresh_secs: Some(0.0),
        ..Overrides::default()
    };
    let l = load_with(&flags, None, None, &env(&[]));
    assert_eq!(l.config.refresh_secs, 5.0);
    assert_eq!(l.warnings.len(), 1);
}

#[test]
fn project_dirs_name_quotatop() {
    if let Some(d) = project_dirs() {
        assert!(d.config_dir().to_string_lossy().contains("quotatop"));
    }
}

/// Issue 16: an unknown key (at the top or in a section) is warned about by its path and left
/// out; the rest of the file applies.
#[test]
fn unknown_keys_are_warned_about_and_the_rest_applies() {
    let (_dir, p) = temp_file(
        "unknown",
        "theme = \"light\"\nbogus = 1\nqueues = [\"a\"]\n[journal]\nretention_days = 9\nretension = 3\n\
         [loops]\nmin_preemptions = 7\n",
    );
    let l = load_with(&Overrides::default(), Some(p), None, &env(&[]));
    assert_eq!(l.config.theme, "light", "{:?}", l.warnings);
    assert_eq!(l.config.queues, vec!["a".to_string()]);
    assert_eq!(l.config.journal.retention_days, 9);
    assert_eq!(l.config.loops.min_preemptions, 7);
    assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);
    assert!(
        l.warnings.iter().any(|w| w.contains("unknown key `bogus`")),
        "{:?}",
        l.warnings
    );
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("unknown key `journal.retension`")),
        "{:?}",
        l.warnings
    );
    assert_eq!(l.broken, None);
}

/// Issue 16: a file that cannot be parsed leaves the defaults for viewing and says the file is
/// broken (changes are refused on it).
#[test]
fn an_unparsable_file_is_broken() {
    let (_dir, p) = temp_file("unparsable", "read_only = true\n[priority\n");
    let l = load_with(&Overrides::default(), Some(p), None, &env(&[]));
    assert_eq!(l.config, Config::default());
    assert!(l.broken.is_some());
    assert!(
        l.warnings[0].contains("changes are refused"),
        "{:?}",
        l.warnings
    );
    let (_dir, p) = temp_file("badtype", "refresh_secs = \"fast\"\n");
    let l = load_with(&Overrides::default(), Some(p), None, &env(&[]));
    assert!(
        l.broken
            .as_deref()
            .is_some_and(|b| b.contains("refresh_secs")),
        "{:?}",
        l.broken
    );
}

const TWO_SOURCES: &str = "queues = [\"ml-training\"]\n\
     [[sources]]\nname = \"us\"\nprofile = \"prod\"\nregion = \"us-east-1\"\n\
     [[sources]]\nname = \"eu\"\nregion = \"eu-west-1\"\nendpoint_url = \"http://127.0.0.1:5566\"\nqueues = [\"eu-only\"]\n";

#[test]
fn sources_are_read_in_order_and_picked_by_name() {
    let (_dir, p) = temp_file("sources", TWO_SOURCES);
    let l = load_with(&Overrides::default(), Some(p), None, &env(&[]));
    assert!(
        l.warnings.is_empty() && l.broken.is_none(),
        "{:?}",
        l.warnings
    );
    let all = l.config.select_sources(&[], false).unwrap();
    let names: Vec<_> = all.iter().map(|s| s.name.as_deref()).collect();
    assert_eq!(names, [Some("us"), Some("eu")]);
    assert_eq!(all[0].profile.as_deref(), Some("prod"));
    // A source without its own queues watches the top-level ones.
    assert_eq!(all[0].queues, ["ml-training"]);
    assert_eq!(all[1].queues, ["eu-only"]);
    assert_eq!(
        all[1].endpoint_url.as_deref(),
        Some("http://127.0.0.1:5566")
    );
    let eu = l.config.select_sources(&["eu".into()], false).unwrap();
    assert_eq!(eu.len(), 1);
    assert_eq!(eu[0].region.as_deref(), Some("eu-west-1"));
    // `--profile`/`--region`/`--endpoint-url` without `--source`: the one implicit source.
    let implicit = l.config.select_sources(&[], true).unwrap();
    assert_eq!(implicit.len(), 1);
    assert_eq!(implicit[0].name, None);
}

#[test]
fn an_unknown_source_names_the_known_ones() {
    let (_dir, p) = temp_file("sources-unknown", TWO_SOURCES);
    let l = load_with(&Overrides::default(), Some(p), None, &env(&[]));
    let e = l.config.select_sources(&["ap".into()], false).unwrap_err();
    assert_eq!(e.to_string(), "unknown source `ap` (known sources: us, eu)");
    let e = Config::default()
        .select_sources(&["ap".into()], false)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "unknown source `ap` (the config has no [[sources]])");
}

#[test]
fn without_sources_the_single_source_config_is_the_implicit_source() {
    let l = load_with(
        &Overrides {
            queues: vec!["q1".into()],
            profile: Some("p".into()),
            region: Some("eu-west-1".into()),
            endpoint_url: Some("http://127.0.0.1:1".into()),
            ..Overrides::default()
        },
        None,
        None,
        &env(&[]),
    );
    let s = l.config.select_sources(&[], false).unwrap();
    assert_eq!(
        s,
        [SelectedSource {
            name: None,
            profile: Some("p".into()),
            region: Some("eu-west-1".into()),
            endpoint_url: Some("http://127.0.0.1:1".into()),
            queues: vec!["q1".into()],
        }]
    );
}

#[test]
fn duplicate_or_bad_source_names_make_the_file_broken() {
    for (name, text, why) in [
        (
            "dup",
            "[[sources]]\nname = \"us\"\n[[sources]]\nname = \"us\"\nregion = \"x\"\n",
            "the name `us` is used twice",
        ),
        (
            "empty",
            "[[sources]]\nregion = \"x\"\n",
            "sources[0]: name ``",
        ),
        (
            "at",
            "[[sources]]\nname = \"a@b\"\n",
            "sources[0]: name `a@b`",
        ),
    ] {
        let (_dir, p) = temp_file(&format!("sources-{name}"), text);
        let l = load_with(&Overrides::default(), Some(p), None, &env(&[]));
        let broken = l.broken.unwrap_or_default();
        assert!(broken.contains(why), "{name}: {broken}");
        assert!(l.config.sources.is_empty());
    }
}

/// Issue 29 §2.16: a read-only refusal names what set read-only mode: the file, the variable
/// or the flag (the last layer that turned it on).
#[test]
fn the_read_only_refusal_names_what_set_it() {
    let (_dir, p) = temp_file("read-only-from", "read_only = true\n");
    let l = load_with(&Overrides::default(), Some(p.clone()), None, &env(&[]));
    let file = format!("read_only = true in {}", p.display());
    assert_eq!(l.read_only_from.as_deref(), Some(file.as_str()));
    assert!(
        l.read_only_refusal("set-priority", "change anything")
            .contains(&file)
    );
    let l = load_with(
        &Overrides::default(),
        None,
        None,
        &env(&[("QUOTATOP_READ_ONLY", "yes")]),
    );
    assert_eq!(
        l.read_only_from.as_deref(),
        Some("the environment variable QUOTATOP_READ_ONLY=yes")
    );
    // The variable turning it off undoes the file's setting.
    let l = load_with(
        &Overrides::default(),
        Some(p.clone()),
        None,
        &env(&[("QUOTATOP_READ_ONLY", "0")]),
    );
    assert!(!l.config.read_only);
    assert_eq!(l.read_only_from, None);
    let flags = Overrides {
        read_only: true,
        ..Overrides::default()
    };
    let l = load_with(&flags, Some(p), None, &env(&[]));
    assert_eq!(l.read_only_from.as_deref(), Some("the --read-only flag"));
    let l = load_with(&Overrides::default(), None, None, &env(&[]));
    assert_eq!(l.read_only_from, None);
}

#[test]
fn priority_min_justification_chars_is_read_from_the_file() {
    let l = load_with(&Overrides::default(), None, None, &env(&[]));
    assert_eq!(l.config.priority.min_justification_chars, 15);
    let (_dir, p) = temp_file(
        "min-justification",
        "[priority]\nmin_justification_chars = 40\n",
    );
    let l = load_with(&Overrides::default(), Some(p), None, &env(&[]));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(l.config.priority.min_justification_chars, 40);
}
