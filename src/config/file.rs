//! Reading the config file: its settings, with a warning per unknown key (left out, the rest
//! applies), and the file's rules and sources checked.

use std::path::Path;

use super::{Config, ConfigError, sources};

/// Keys the file may not name more than this many times before it counts as broken.
const MAX_UNKNOWN_KEYS: usize = 64;

/// The file's settings, and a warning per unknown key (left out; the rest applies).
pub(super) fn read_file(path: &Path) -> Result<(Config, Vec<String>), ConfigError> {
    let text = quotatop_model::read_small_text(path, quotatop_model::MAX_SMALL_FILE).map_err(
        |source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        },
    )?;
    let parse_error = |message: String| ConfigError::Parse {
        path: path.display().to_string(),
        message,
    };
    let mut table: toml::Table =
        toml::from_str(&text).map_err(|e| parse_error(e.message().to_string()))?;
    let mut unknown = Vec::new();
    let config: Config = loop {
        match serde_path_to_error::deserialize(toml::Value::Table(table.clone())) {
            Ok(c) => break c,
            Err(e) => {
                let message = e.inner().to_string().trim().to_string();
                let at = e.path().to_string();
                // serde names the field in backquotes: "unknown field `x`, expected …".
                let field = message
                    .strip_prefix("unknown field `")
                    .and_then(|rest| rest.split_once('`'))
                    .map(|(name, _)| name.to_string());
                let parent = field.as_deref().and_then(|f| parent_keys(e.path(), f));
                let key = match (&field, &parent) {
                    (Some(f), Some(p)) if !p.is_empty() => format!("{}.{f}", p.join(".")),
                    _ => field.clone().unwrap_or_else(|| at.clone()),
                };
                let removable = unknown.len() < MAX_UNKNOWN_KEYS
                    && matches!((&field, &parent), (Some(f), Some(p)) if remove_key(&mut table, p, f));
                if !removable {
                    return Err(parse_error(if at == "." {
                        message
                    } else {
                        format!("{at}: {message}")
                    }));
                }
                unknown.push(format!(
                    "config file {}: unknown key `{}` ignored ({})",
                    path.display(),
                    quotatop_model::clean_text(&key),
                    quotatop_model::clean_text(
                        message.split_once("`, ").map_or("", |(_, rest)| rest)
                    ),
                ));
            }
        }
    };
    config
        .rules()
        .validate()
        .map_err(|e| parse_error(e.to_string()))?;
    sources::validate(&config.sources).map_err(|e| parse_error(e.to_string()))?;
    Ok((config, unknown))
}

/// The tables above an unknown `field` the error's path names (the path may or may not end
/// with the field itself); `None` when it goes through anything but tables.
fn parent_keys(path: &serde_path_to_error::Path, field: &str) -> Option<Vec<String>> {
    use serde_path_to_error::Segment;
    let mut keys = path
        .iter()
        .map(|s| match s {
            Segment::Map { key } => Some(key.clone()),
            _ => None,
        })
        .collect::<Option<Vec<String>>>()?;
    if keys.last().is_some_and(|k| k == field) {
        keys.pop();
    }
    Some(keys)
}

/// Removes `field` from the table at `parent`; whether it was there.
fn remove_key(table: &mut toml::Table, parent: &[String], field: &str) -> bool {
    let mut t = table;
    for key in parent {
        match t.get_mut(key.as_str()) {
            Some(toml::Value::Table(inner)) => t = inner,
            _ => return false,
        }
    }
    t.remove(field).is_some()
}
