//! `:` commands, k9s style.

use quotatop_model::{Millis, parse_duration};

use crate::registry::{self, ScreenEntry};
use crate::screen::Kind;

/// A parsed `:` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Open a screen (its names come from [`crate::registry`]).
    Open(Kind),
    /// Switch the current queue.
    Queue(String),
    /// Open a share of the current queue.
    Share(String),
    /// Open a job of the current queue by id (or unique id suffix / name).
    Job(String),
    Theme(String),
    /// Time travel to a recorded snapshot.
    At(When),
    /// Leave time travel.
    Live,
    /// The list of warnings and errors shown so far.
    Messages,
    /// Sort the current list by a column (named as its title's `sort NAME` says).
    Sort(String),
    Help,
    Quit,
}

/// The built-in screens' commands (`:share` with no name opens the overview; the others are
/// spelled in tests only).
#[allow(non_upper_case_globals)]
impl Command {
    pub const Overview: Command = Command::Open(Kind::Overview);
    #[cfg(test)]
    pub const Jobs: Command = Command::Open(Kind::Jobs);
    #[cfg(test)]
    pub const Preemptions: Command = Command::Open(Kind::Preemptions);
    #[cfg(test)]
    pub const Scorecard: Command = Command::Open(Kind::Scorecard);
}

/// Where `:at` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// This long before now.
    Ago(Millis),
    /// This time (epoch ms).
    At(Millis),
    /// This time of day (ms after midnight), today on the data's clock (UTC, as every time
    /// the console shows).
    TimeOfDay(Millis),
}

/// `HH:MM` or `HH:MM:SS` as ms after midnight.
fn time_of_day(s: &str) -> Option<Millis> {
    let t = chrono::NaiveTime::parse_from_str(s, "%H:%M:%S")
        .or_else(|_| chrono::NaiveTime::parse_from_str(s, "%H:%M"))
        .ok()?;
    use chrono::Timelike as _;
    Some(Millis::from(t.num_seconds_from_midnight()) * 1000)
}

/// The commands that are not a screen's, for the help screen (listed after the screens').
pub const COMMANDS: &[(&str, &str)] = &[
    ("queue NAME", "switch queue"),
    ("share NAME", "open a share"),
    ("job ID", "open a job (id, id suffix or name)"),
    ("theme NAME", "dark, light, high-contrast, colorblind"),
    (
        "at WHEN",
        "time travel to 30m, 2h or 1d ago, HH:MM[:SS] today (UTC, the data's clock), or an RFC 3339 time",
    ),
    ("live", "leave time travel"),
    (
        "sort COLUMN",
        "sort the list by a column (its name or start; again: reversed)",
    ),
    (
        "messages",
        "every warning and error shown so far (config problems first)",
    ),
    ("help", "this help"),
    ("q | quit", "quit"),
];

/// Why a `:` line is not a command (the footer shows it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("empty command")]
    Empty,
    #[error(":{command} needs a {what}")]
    Needs { command: String, what: &'static str },
    #[error(":at {0} needs a unit: 30m, 2h or 1d ago, or an RFC 3339 time")]
    NoUnit(String),
    /// Neither a duration (the reason) nor an RFC 3339 time.
    #[error("{0} (or HH:MM[:SS] today, or an RFC 3339 time such as 2026-11-29T14:05:00Z)")]
    BadTime(quotatop_model::DurationError),
    #[error("unknown command :{0} (try :help)")]
    Unknown(String),
}

/// A `:` line, with the built-in screens (the app parses with its own registry, which may hold
/// more: [`parse_with`]).
#[cfg(test)]
pub fn parse(line: &str) -> Result<Command, CommandError> {
    parse_with(line, registry::BUILTIN)
}

/// A `:` line, with `screens`' commands.
pub fn parse_with(line: &str, screens: &[ScreenEntry]) -> Result<Command, CommandError> {
    let mut words = line.split_whitespace();
    let Some(head) = words.next() else {
        return Err(CommandError::Empty);
    };
    let arg: Vec<&str> = words.collect();
    let arg = arg.join(" ");
    let need = |what: &'static str| -> Result<String, CommandError> {
        if arg.is_empty() {
            Err(CommandError::Needs {
                command: head.to_string(),
                what,
            })
        } else {
            Ok(arg.clone())
        }
    };
    if let Some(kind) = registry::by_command(screens, head) {
        return Ok(Command::Open(kind));
    }
    Ok(match head {
        // `:share` without a name: the shares (the overview).
        "share" | "s" if arg.is_empty() => Command::Overview,
        "queue" | "queues" => Command::Queue(need("queue name")?),
        "share" | "s" => Command::Share(arg),
        "job" => Command::Job(need("job id")?),
        "theme" => Command::Theme(need("theme name")?),
        "at" | "travel" => {
            let arg = need("time: 30m, 2h or 1d ago, or an RFC 3339 time")?;
            if arg.trim().chars().all(|c| c.is_ascii_digit()) {
                return Err(CommandError::NoUnit(arg.trim().to_string()));
            }
            if let Some(t) = time_of_day(arg.trim()) {
                return Ok(Command::At(When::TimeOfDay(t)));
            }
            match chrono::DateTime::parse_from_rfc3339(arg.trim()) {
                Ok(t) => Command::At(When::At(t.timestamp_millis())),
                Err(_) => Command::At(When::Ago(
                    parse_duration(&arg).map_err(CommandError::BadTime)?,
                )),
            }
        }
        "live" | "now" => Command::Live,
        "sort" => Command::Sort(need("column name")?),
        "messages" | "messages!" | "msg" => Command::Messages,
        "help" | "h" | "?" => Command::Help,
        "q" | "quit" | "q!" => Command::Quit,
        other => return Err(CommandError::Unknown(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(parse("shares"), Ok(Command::Overview));
        assert_eq!(parse(" jobs "), Ok(Command::Jobs));
        assert_eq!(parse("pre"), Ok(Command::Preemptions));
        assert_eq!(parse("scorecard"), Ok(Command::Scorecard));
        assert_eq!(
            parse("queue ml-training"),
            Ok(Command::Queue("ml-training".into()))
        );
        assert_eq!(
            parse("share research"),
            Ok(Command::Share("research".into()))
        );
        assert_eq!(parse("job abc"), Ok(Command::Job("abc".into())));
        assert_eq!(parse("theme light"), Ok(Command::Theme("light".into())));
        assert_eq!(parse("q"), Ok(Command::Quit));
        assert_eq!(parse("at 30m"), Ok(Command::At(When::Ago(30 * 60_000))));
        assert_eq!(
            parse("at 2026-02-02T02:40:00Z"),
            Ok(Command::At(When::At(1_770_000_000_000)))
        );
        assert_eq!(parse("live"), Ok(Command::Live));
        assert_eq!(parse("sort age"), Ok(Command::Sort("age".into())));
        // Issue 16: a time of day, to the minute or the second.
        assert_eq!(
            parse("at 14:00"),
            Ok(Command::At(When::TimeOfDay(14 * 3_600_000)))
        );
        assert_eq!(
            parse("at 09:05:30"),
            Ok(Command::At(When::TimeOfDay(
                9 * 3_600_000 + 5 * 60_000 + 30_000
            )))
        );
        assert!(parse("at 25:00").is_err());
    }

    #[test]
    fn bad_commands_say_why() {
        let why = |line: &str| parse(line).unwrap_err().to_string();
        assert_eq!(why(""), "empty command");
        assert_eq!(why("queue"), ":queue needs a queue name");
        assert!(why("at").contains("needs a time"));
        assert!(why("at 90").contains("needs a unit"));
        assert!(why("at yesterday").contains("RFC 3339"));
        assert!(why("frobnicate").contains("unknown command :frobnicate"));
    }
}
