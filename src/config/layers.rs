//! The layering: built-in defaults, then the file, the environment and the flags, each over
//! the one before; what set read-only mode is kept for the refusal.

use std::path::PathBuf;

use super::file::read_file;
use super::{Config, Loaded, Overrides};

/// The per-user directories (`None` when the OS reports no home directory).
pub fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "quotatop")
}

/// A yes/no word as the environment spells it: `1/0`, `true/false`, `yes/no`, `on/off` (any
/// case, surrounding blanks ignored); anything else is `None`. The one parser for every switch
/// read from the environment, for the console and the commands alike.
pub fn parse_switch(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Loads with the real environment and the user's directories.
pub fn load(flags: &Overrides) -> Loaded {
    let dirs = project_dirs();
    let default_file = dirs.as_ref().map(|d| d.config_dir().join("config.toml"));
    let theme_dir = dirs.as_ref().map(|d| d.config_dir().join("themes"));
    load_with(flags, default_file, theme_dir, &|k| std::env::var(k).ok())
}

/// The environment's layer over the file's: theme, colour, queues, read-only mode, the AWS
/// profile and region.
fn apply_environment(
    config: &mut Config,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
    read_only_from: &mut Option<String>,
) {
    if let Some(t) = env("QUOTATOP_THEME").filter(|s| !s.is_empty()) {
        config.theme = t;
    }
    if env("NO_COLOR").is_some_and(|s| !s.is_empty()) {
        config.no_color = true;
    }
    if let Some(q) = env("QUOTATOP_QUEUES").filter(|s| !s.is_empty()) {
        config.queues = q
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
    }
    if let Some(v) = env("QUOTATOP_READ_ONLY").filter(|s| !s.is_empty()) {
        match parse_switch(&v) {
            Some(on) => {
                config.read_only = on;
                *read_only_from = on.then(|| {
                    format!(
                        "the environment variable QUOTATOP_READ_ONLY={}",
                        quotatop_model::clean_text(&v)
                    )
                });
            }
            None => warnings.push(format!(
                "QUOTATOP_READ_ONLY={} is not a yes/no value (1/0, true/false, yes/no, on/off); ignored",
                quotatop_model::clean_text(&v)
            )),
        }
    }
    if let Some(p) = env("AWS_PROFILE").filter(|s| !s.is_empty()) {
        config.profile = Some(p);
    }
    if let Some(r) = env("AWS_REGION")
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .filter(|s| !s.is_empty())
    {
        config.region = Some(r);
    }
}

/// The command line's layer, over the environment's.
fn apply_flags(config: &mut Config, flags: &Overrides, read_only_from: &mut Option<String>) {
    if let Some(t) = &flags.theme {
        config.theme = t.clone();
    }
    config.no_color |= flags.no_color;
    if flags.read_only {
        config.read_only = true;
        *read_only_from = Some("the --read-only flag".to_string());
    }
    config.tag_justification |= flags.tag_justification;
    if !flags.queues.is_empty() {
        config.queues = flags.queues.clone();
    }
    for (slot, flag) in [
        (&mut config.profile, &flags.profile),
        (&mut config.region, &flags.region),
        (&mut config.endpoint_url, &flags.endpoint_url),
    ] {
        if flag.is_some() {
            slot.clone_from(flag);
        }
    }
    if let Some(r) = flags.refresh_secs {
        config.refresh_secs = r;
    }
}

/// Layering with every input passed in (tests give a fake environment).
pub fn load_with(
    flags: &Overrides,
    default_file: Option<PathBuf>,
    theme_dir: Option<PathBuf>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Loaded {
    let mut warnings = Vec::new();
    let path = flags
        .config_path
        .clone()
        .or_else(|| {
            env("QUOTATOP_CONFIG")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
        })
        .or(default_file);
    // An explicitly named file must exist; the default one may be absent.
    let explicit =
        flags.config_path.is_some() || env("QUOTATOP_CONFIG").is_some_and(|s| !s.is_empty());
    let mut broken = None;
    let mut config = match path.as_deref() {
        Some(p) if p.exists() || explicit => match read_file(p) {
            Ok((c, unknown)) => {
                warnings.extend(unknown);
                c
            }
            Err(e) => {
                let why = quotatop_model::error_chain(&e);
                warnings.push(format!(
                    "{why}; using defaults (changes are refused until it is fixed)"
                ));
                broken = Some(why);
                Config::default()
            }
        },
        _ => Config::default(),
    };

    // What set read-only mode, named when a change is refused (the last layer that said so).
    let mut read_only_from = match path.as_deref() {
        Some(p) if config.read_only => Some(format!("read_only = true in {}", p.display())),
        _ => None,
    };

    apply_environment(&mut config, env, &mut warnings, &mut read_only_from);
    apply_flags(&mut config, flags, &mut read_only_from);
    if !(config.refresh_secs.is_finite() && config.refresh_secs >= 0.5) {
        warnings.push(format!(
            "refresh_secs {} is below 0.5 s; using 5",
            config.refresh_secs
        ));
        config.refresh_secs = 5.0;
    }
    Loaded {
        config,
        path,
        theme_dir,
        warnings,
        broken,
        read_only_from,
        policy_file: None,
    }
}
