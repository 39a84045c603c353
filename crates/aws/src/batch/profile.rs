//! A named AWS profile must exist: the SDK takes a missing one silently and the first call then
//! fails "no credentials found", which sends the operator after keys instead of the name.

use std::path::PathBuf;

use super::error::BatchError;

/// The shared config file and credentials file the SDK reads (`AWS_CONFIG_FILE`,
/// `AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/config` and `~/.aws/credentials`).
fn profile_files(env: &dyn Fn(&str) -> Option<String>) -> [(PathBuf, bool); 2] {
    let home = env("HOME").unwrap_or_default();
    let path = |var: &str, default: &str| {
        env(var)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(&home).join(".aws").join(default))
    };
    [
        (path("AWS_CONFIG_FILE", "config"), true),
        (path("AWS_SHARED_CREDENTIALS_FILE", "credentials"), false),
    ]
}

/// Profile names in one file's text: `[profile NAME]` and `[default]` in the config file,
/// `[NAME]` in the credentials file.
fn names_in(text: &str, config_file: bool) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let inner = l.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
            if !config_file || inner == "default" {
                return Some(inner.to_string());
            }
            inner
                .strip_prefix("profile")
                .filter(|rest| rest.starts_with(char::is_whitespace))
                .map(|rest| rest.trim().to_string())
        })
        .collect()
}

/// Refuses a profile that neither file names, saying where it looked and which profiles exist.
pub(crate) fn check_profile(
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), BatchError> {
    let files = profile_files(env);
    let mut known: Vec<String> = Vec::new();
    for (path, config_file) in &files {
        if let Ok(text) = std::fs::read_to_string(path) {
            known.extend(names_in(&text, *config_file));
        }
    }
    if known.iter().any(|k| k == name) {
        return Ok(());
    }
    known.sort();
    known.dedup();
    let existing = if known.is_empty() {
        "there are none".to_string()
    } else {
        format!("profiles there: {}", known.join(", "))
    };
    Err(BatchError::Config(format!(
        "profile {} not found in {} or {} ({existing}): check --profile, AWS_PROFILE or `profile` in quotatop's config",
        quotatop_model::clean_text(name),
        files[0].0.display(),
        files[1].0.display(),
    )))
}

/// The CA bundle the AWS CLI would trust: `AWS_CA_BUNDLE`, else the profile's `ca_bundle` in the
/// shared config file. Returns the path and where it came from, for messages.
pub(crate) fn ca_bundle(
    profile: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(PathBuf, String)> {
    if let Some(p) = env("AWS_CA_BUNDLE").filter(|p| !p.is_empty()) {
        return Some((PathBuf::from(p), "AWS_CA_BUNDLE".to_string()));
    }
    let [(config, _), _] = profile_files(env);
    let text = std::fs::read_to_string(&config).ok()?;
    let mut in_profile = false;
    for line in text.lines() {
        let l = line.trim();
        if let Some(inner) = l.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            in_profile = names_in(l, true).first().is_some_and(|n| n == profile)
                && !inner.trim().starts_with("sso-session");
            continue;
        }
        if !in_profile {
            continue;
        }
        if let Some((k, v)) = l.split_once('=')
            && k.trim() == "ca_bundle"
        {
            let v = v.trim();
            return (!v.is_empty()).then(|| {
                (
                    PathBuf::from(v),
                    format!("ca_bundle of profile {profile} in {}", config.display()),
                )
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_profile_is_named_with_the_files_and_the_profiles_there() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        let creds = dir.path().join("credentials");
        std::fs::write(
            &config,
            "[default]\nregion = us-east-1\n[profile ops]\nregion = eu-west-1\n[sso-session corp]\n",
        )
        .unwrap();
        std::fs::write(&creds, "[batch-admin]\naws_access_key_id = x\n").unwrap();
        let (c, k) = (config.display().to_string(), creds.display().to_string());
        let env = move |v: &str| match v {
            "AWS_CONFIG_FILE" => Some(c.clone()),
            "AWS_SHARED_CREDENTIALS_FILE" => Some(k.clone()),
            _ => None,
        };
        for ok in ["default", "ops", "batch-admin"] {
            assert!(check_profile(ok, &env).is_ok(), "{ok}");
        }
        let err = check_profile("nosuch", &env).unwrap_err().to_string();
        assert!(err.contains("profile nosuch not found in"), "{err}");
        assert!(err.contains(&config.display().to_string()), "{err}");
        assert!(
            err.contains("profiles there: batch-admin, default, ops"),
            "{err}"
        );
        assert!(
            !err.contains("corp"),
            "an sso-session is not a profile: {err}"
        );
        let none = |_: &str| Some("/nonexistent".to_string());
        let err = check_profile("x", &none).unwrap_err().to_string();
        assert!(err.contains("there are none"), "{err}");
    }

    #[test]
    fn the_ca_bundle_is_the_variable_else_the_profiles() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::write(
            &config,
            "[default]\nca_bundle = /etc/a.pem\n[profile ops]\nregion = x\nca_bundle=/etc/ops.pem\n[profile none]\n",
        )
        .unwrap();
        let c = config.display().to_string();
        let env = |bundle: Option<&'static str>| {
            let c = c.clone();
            move |v: &str| match v {
                "AWS_CONFIG_FILE" => Some(c.clone()),
                "AWS_CA_BUNDLE" => bundle.map(str::to_string),
                _ => None,
            }
        };
        let path = |p: &str, e: &dyn Fn(&str) -> Option<String>| ca_bundle(p, e).map(|(p, _)| p);
        assert_eq!(
            path("default", &env(None)),
            Some(PathBuf::from("/etc/a.pem"))
        );
        assert_eq!(path("ops", &env(None)), Some(PathBuf::from("/etc/ops.pem")));
        assert_eq!(path("none", &env(None)), None);
        assert_eq!(path("nosuch", &env(None)), None);
        let (p, from) = ca_bundle("ops", &env(Some("/tmp/ca.pem"))).unwrap();
        assert_eq!(
            (p, from.as_str()),
            (PathBuf::from("/tmp/ca.pem"), "AWS_CA_BUNDLE")
        );
    }
}
