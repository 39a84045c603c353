//! The policy file: a versioned TOML document of classes of work, and the owners of each share.
//!
//! ```toml
//! version = 1
//! name = "ml-training"
//!
//! [[class]]
//! name = "incident"
//! description = "Production incident remediation"
//! priority = [8000, 9999]          # the range the class's jobs use (inclusive)
//! shares = ["prod"]                # the shares it runs in
//! max_wait = "15m"                 # promise: capacity within this long of submission
//! deadline_factor = 3.0            # promise: succeeded within 3 × its work
//! max_preemptions_per_job = 0      # interruption budget
//! max_lost_gpu_hours_per_day = 0.0
//! protected = true                 # its capacity is never lent
//! may_borrow = false
//! operators = ["alice", "arn:aws:sts::123456789012:assumed-role/oncall/*"]
//! change_record = true             # moving a job into it (or ending one) needs a change record
//! terminate = ["oncall-*"]         # who may terminate or requeue its jobs (default: anyone)
//!
//! [owners]
//! prod = ["head-of-sre"]           # who approves a change of the share's limits
//! ```
//!
//! [`parse`] stops at what makes the file unreadable (syntax, an unknown key, a value out of
//! range), naming the line; relations between classes and shares are the lint's
//! ([`crate::lint`]), which reports them all at once.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use quotatop_analysis::scorecard::decision::Budget;
use quotatop_model::{MAX_PRIORITY, Millis};

/// The version of the format this build reads and writes.
pub const POLICY_VERSION: u32 = 1;

/// The job tag naming a job's class (membership's first source): the model's, which the
/// journal records.
pub const CLASS_TAG: &str = quotatop_model::CLASS_TAG;

/// Why a policy file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read the policy file {path}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("policy file {origin}: {message}")]
    Invalid { origin: String, message: String },
}

/// A priority range, inclusive at both ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorityRange {
    pub min: u32,
    pub max: u32,
}

impl PriorityRange {
    pub fn contains(self, priority: u32) -> bool {
        (self.min..=self.max).contains(&priority)
    }
    pub fn overlaps(self, other: PriorityRange) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

impl std::fmt::Display for PriorityRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.min, self.max)
    }
}

/// What a class is promised.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Promise {
    /// First capacity within this long of submission.
    pub max_wait_ms: Option<Millis>,
    /// Succeeded within this many times its work after submission.
    pub deadline_factor: Option<f64>,
}

impl Promise {
    pub fn is_empty(&self) -> bool {
        self.max_wait_ms.is_none() && self.deadline_factor.is_none()
    }
}

/// One class of work.
#[derive(Debug, Clone, PartialEq)]
pub struct Class {
    pub name: String,
    pub description: String,
    pub priority: PriorityRange,
    /// The shares it runs in, in file order.
    pub shares: Vec<String>,
    pub promise: Promise,
    /// Its interruption budget (empty: none).
    pub budget: Budget,
    /// Its capacity is never lent (its shares should be RESERVE).
    pub protected: bool,
    /// It may borrow other shares' idle capacity.
    pub may_borrow: bool,
    /// Who may move a job into the class (empty: anyone): an OS user name or an AWS principal
    /// ARN, exactly or up to a trailing `*`.
    pub operators: Vec<String>,
    /// Moving a job into the class needs a change record (so do ending and requeueing one).
    pub change_record: bool,
    /// Who may terminate or requeue the class's jobs (empty: anyone), named as `operators` are.
    pub terminate: Vec<String>,
    /// The line of its `[[class]]` entry in the file.
    pub line: usize,
}

impl Class {
    /// Whether `who` (the names the audit records for an operator: the OS user and, when known,
    /// the AWS principal) may move a job into this class.
    pub fn allows<'a>(&self, who: impl Iterator<Item = &'a str>) -> bool {
        names_any(&self.operators, who)
    }

    /// Whether `who` may terminate or requeue the class's jobs (`terminate`).
    pub fn allows_ending<'a>(&self, who: impl Iterator<Item = &'a str>) -> bool {
        names_any(&self.terminate, who)
    }
}

/// Whether `list` (empty: anyone) names one of `who`, exactly or up to a trailing `*`.
fn names_any<'a>(list: &[String], mut who: impl Iterator<Item = &'a str>) -> bool {
    list.is_empty()
        || who.any(|w| {
            list.iter().any(|o| match o.strip_suffix('*') {
                Some(prefix) => w.starts_with(prefix),
                None => w == o,
            })
        })
}

/// A policy as read from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub version: u32,
    pub name: Option<String>,
    /// In file order (the order membership breaks ties by).
    pub classes: Vec<Class>,
    /// Per share, who approves a change of its limits.
    pub owners: BTreeMap<String, Vec<String>>,
    /// Where it was read from (a path), for messages.
    pub origin: String,
    /// SHA-256 of the file's bytes, in hex: recorded with every change made under it.
    pub hash: String,
}

impl Policy {
    pub fn class(&self, name: &str) -> Option<&Class> {
        self.classes.iter().find(|c| c.name == name)
    }
    /// The hash's first 12 hex digits, as messages show it.
    pub fn short_hash(&self) -> &str {
        self.hash.get(..12).unwrap_or(&self.hash)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    version: Option<u32>,
    name: Option<String>,
    #[serde(default, rename = "class")]
    classes: Vec<toml::Spanned<RawClass>>,
    #[serde(default)]
    owners: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClass {
    name: String,
    #[serde(default)]
    description: String,
    priority: [i64; 2],
    #[serde(default)]
    shares: Vec<String>,
    max_wait: Option<String>,
    deadline_factor: Option<f64>,
    max_preemptions_per_job: Option<u32>,
    max_lost_gpu_hours_per_day: Option<f64>,
    #[serde(default)]
    protected: bool,
    #[serde(default)]
    may_borrow: bool,
    #[serde(default)]
    operators: Vec<String>,
    #[serde(default)]
    change_record: bool,
    #[serde(default)]
    terminate: Vec<String>,
}

/// `line N, column M` of byte offset `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    Lines::of(text).line_col(at)
}

/// Where each line of a text starts, found once: a policy of many classes asks for the line of
/// each, which scanning the text from its start every time made quadratic (61,146 classes took
/// minutes to read, and `record` waited for it before polling).
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn of(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { text, starts }
    }

    /// The 1-based line and column (in characters) of byte `at`.
    fn line_col(&self, at: usize) -> (usize, usize) {
        let at = self.text.floor_char_boundary(at.min(self.text.len()));
        let line = self.starts.partition_point(|&s| s <= at);
        let start = self.starts.get(line.wrapping_sub(1)).copied().unwrap_or(0);
        (line, self.text[start..at].chars().count() + 1)
    }
}

/// A class name: letters, digits, `-`, `_` and `.`, 1 to 64 of them (it is a tag value and a
/// Prometheus label).
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Reads a policy from its text. `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Policy, PolicyError> {
    let invalid = |message: String| PolicyError::Invalid {
        origin: origin.to_string(),
        message,
    };
    let raw: RawPolicy = toml::from_str(text).map_err(|e| {
        invalid(match e.span() {
            Some(s) => {
                let (line, col) = line_col(text, s.start);
                format!("line {line}, column {col}: {}", e.message().trim())
            }
            None => e.message().trim().to_string(),
        })
    })?;
    let version = raw.version.ok_or_else(|| {
        invalid(format!(
            "no `version`: add `version = {POLICY_VERSION}` as the file's first line"
        ))
    })?;
    if version != POLICY_VERSION {
        return Err(invalid(format!(
            "version = {version}: this build reads version {POLICY_VERSION} (a newer quotatop wrote it, or a typo)"
        )));
    }
    if raw.classes.is_empty() {
        return Err(invalid(
            "no [[class]] entry: a policy names at least one class of work (see `quotatop policy init`)".into(),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut classes = Vec::new();
    let lines = Lines::of(text);
    for spanned in raw.classes {
        let (line, _) = lines.line_col(spanned.span().start);
        let class = check_class(spanned.into_inner(), line).map_err(|m| invalid(m.0))?;
        if !seen.insert(class.name.clone()) {
            return Err(invalid(format!(
                "line {line}: class {:?} is named twice: give each class its own name",
                class.name
            )));
        }
        classes.push(class);
    }
    Ok(Policy {
        version,
        name: raw.name,
        classes,
        owners: raw.owners,
        origin: origin.to_string(),
        hash: hash(text),
    })
}

/// SHA-256 of the policy text, in hex.
pub fn hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One class, every value in range; the message names the line and the key.
/// Why a class of the file cannot be used: its line, its name, the key and what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
struct ClassProblem(String);

/// A `max_wait` duration, which must carry its unit.
fn max_wait(w: &str) -> Result<quotatop_model::Millis, String> {
    if !w.trim_end().ends_with(|ch: char| ch.is_ascii_alphabetic()) {
        return Err(format!(
            "{w:?} has no unit: write e.g. \"15m\", \"4h\" or \"2d\""
        ));
    }
    quotatop_model::parse_duration(w).map_err(|e| e.to_string())
}

fn check_class(c: RawClass, line: usize) -> Result<Class, ClassProblem> {
    let at =
        |key: &str, m: String| ClassProblem(format!("line {line}: class {:?}: {key}: {m}", c.name));
    if !valid_name(&c.name) {
        return Err(ClassProblem(format!(
            "line {line}: class name {:?}: use 1 to 64 letters, digits, '-', '_' or '.' (it is a tag value and a metric label)",
            c.name
        )));
    }
    let [lo, hi] = c.priority;
    let max = i64::from(MAX_PRIORITY);
    if !(0..=max).contains(&lo) || !(0..=max).contains(&hi) || lo > hi {
        return Err(at(
            "priority",
            format!("[{lo}, {hi}] is not a range: write [lowest, highest], both within 0-{max}"),
        ));
    }
    let max_wait_ms = match &c.max_wait {
        None => None,
        Some(w) => Some(max_wait(w).map_err(|m| at("max_wait", m))?),
    };
    if let Some(f) = c.deadline_factor
        && !(f.is_finite() && f > 0.0 && f <= 1e6)
    {
        return Err(at(
            "deadline_factor",
            format!("{f}: must be above 0 and at most 1000000 (times the job's work)"),
        ));
    }
    if let Some(v) = c.max_lost_gpu_hours_per_day
        && !(v.is_finite() && v >= 0.0)
    {
        return Err(at(
            "max_lost_gpu_hours_per_day",
            format!("{v}: must be ≥ 0"),
        ));
    }
    if let Some((key, message)) = names_no_one(&c) {
        return Err(at(key, message));
    }
    Ok(Class {
        name: c.name,
        description: c.description,
        priority: PriorityRange {
            min: lo as u32,
            max: hi as u32,
        },
        shares: c.shares,
        promise: Promise {
            max_wait_ms,
            deadline_factor: c.deadline_factor,
        },
        budget: Budget {
            max_preemptions_per_job: c.max_preemptions_per_job,
            max_lost_gpu_hours_per_day: c.max_lost_gpu_hours_per_day,
        },
        protected: c.protected,
        may_borrow: c.may_borrow,
        operators: c.operators,
        change_record: c.change_record,
        terminate: c.terminate,
        line,
    })
}

/// The first of a class's lists of people (`operators`, `terminate`) with an entry that names
/// no one (blank, or a bare `*`), with what to write instead.
fn names_no_one(c: &RawClass) -> Option<(&'static str, String)> {
    [
        ("operators", &c.operators, "to let anyone use the class"),
        (
            "terminate",
            &c.terminate,
            "to let anyone end the class's jobs",
        ),
    ]
    .into_iter()
    .find_map(|(key, list, leave_out)| {
        let o = list.iter().find(|o| o.trim().is_empty() || *o == "*")?;
        Some((
            key,
            format!(
                "{o:?} names no one: leave `{key}` out {leave_out}, or name users or principals"
            ),
        ))
    })
}

/// Reads the policy file at `path`: a regular file of at most
/// [`quotatop_model::MAX_SMALL_FILE`] bytes, as every configuration input.
pub fn read(path: &std::path::Path) -> Result<Policy, PolicyError> {
    let text = quotatop_model::read_small_text(path, quotatop_model::MAX_SMALL_FILE).map_err(
        |source| PolicyError::Read {
            path: path.display().to_string(),
            source,
        },
    )?;
    parse(&text, &path.display().to_string())
}

#[cfg(test)]
mod line_tests {
    use super::Lines;

    /// The line and column as counted from the start of the text, every time.
    fn scanned(text: &str, at: usize) -> (usize, usize) {
        let before = &text[..text.floor_char_boundary(at.min(text.len()))];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }

    #[test]
    fn the_line_index_says_what_scanning_from_the_start_says() {
        for text in [
            "",
            "a",
            "\n",
            "ab\ncd\n\néf\n",
            "x = 1\n[[class]]\nname = \"ü\"\n",
            "\n\né",
        ] {
            let lines = Lines::of(text);
            for at in 0..=text.len() + 2 {
                assert_eq!(lines.line_col(at), scanned(text, at), "{text:?} at {at}");
            }
        }
    }
}
