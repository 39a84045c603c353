//! The two status lines at the top: where the data comes from, which queue, how old the data is,
//! API calls per minute, throttling / error state, the read-only badge, and, while time
//! travelling, the PAST badge with the recorded time in place of the data's age.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::data::Data;
use super::text::{clean, clock, date_time, duration};
use super::theme::{Role, Theme};
use quotatop_model::{HealthState, Millis, QueueSnapshot, Snapshot, Source, SourceVerdict};

/// Beyond this, the data's clock is shown beside this machine's.
pub const CLOCK_SKEW_SHOWN_MS: Millis = 60_000;

/// How far the service's clock is ahead of this machine's (negative: behind), when it is by
/// more than [`CLOCK_SKEW_SHOWN_MS`]: the service's time at the refresh against the local time
/// it was received.
pub fn clock_skew(q: &QueueSnapshot) -> Option<Millis> {
    let skew = q.server_time? - q.refreshed_at?;
    (skew.abs() > CLOCK_SKEW_SHOWN_MS).then_some(skew)
}

/// What the status bar shows besides the data.
#[derive(Debug, Clone, Default)]
pub struct StatusInfo {
    /// Where the console was told to connect (shown until the first snapshot says it).
    pub source: Source,
    pub read_only: bool,
    /// What set read-only mode (the flag, the variable or the file), named when a change is
    /// refused.
    pub read_only_from: Option<String>,
    /// Whether the console keeps history (the journal), shown when it does not.
    pub history: History,
    /// Why the config file could not be used, when it could not (changes are refused).
    pub config_broken: Option<String>,
    /// Start-up warnings (config file, theme, keys), kept in `:messages`.
    pub messages: usize,
    /// The shared store this console follows instead of polling AWS (its URL without the
    /// password): named in place of the endpoint, and the data's age is the recorder's
    /// snapshot's.
    pub store: Option<String>,
    /// The data's clock is a simulation's (`quotatop demo`'s emulator): its time is said as
    /// the emulator's, not as a clock gone wrong.
    pub emulated_clock: bool,
}

/// The journal as the status bar reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum History {
    /// Recording (or nothing to say: tests, consoles without a journal option).
    #[default]
    Recording,
    /// `--no-journal`.
    Off,
    /// The journal could not be opened; the reason is in the footer warnings.
    Unavailable,
}

/// Time travel as the status bar shows it.
#[derive(Debug, Clone)]
pub struct PastMark {
    /// Local time the recorded snapshot was taken.
    pub taken_at: Millis,
    /// The service's time in that snapshot (what its job timestamps are relative to).
    pub data_at: Millis,
    /// 1-based position among the stored snapshots, and how many there are.
    pub position: usize,
    pub total: usize,
    /// The keys that step back, forward and return to live.
    pub older: String,
    pub newer: String,
    pub live: String,
}

/// Why the live data of `queue` is stale (its last refresh failed), when it is.
pub fn stale<'a>(data: &'a Data, queue: Option<&str>) -> Option<&'a str> {
    data.queue(queue)
        .and_then(|(q, _)| q.stale_reason.as_deref())
}

/// `n` with thousands separators (`10,000`).
fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A ten-cell progress gauge of `done` out of `total`.
fn gauge(done: usize, total: usize) -> String {
    const CELLS: usize = 10;
    let full = (done * CELLS)
        .checked_div(total)
        .unwrap_or(CELLS)
        .min(CELLS);
    format!("[{}{}]", "█".repeat(full), "░".repeat(CELLS - full))
}

fn health(state: HealthState, theme: &Theme) -> Span<'static> {
    let (text, role) = match state {
        HealthState::Starting => ("● starting", Role::Muted),
        HealthState::Healthy => ("● healthy", Role::Healthy),
        HealthState::Throttled => ("● throttled, backing off", Role::Warning),
        HealthState::Degraded => ("● degraded, data partly stale", Role::Warning),
        HealthState::Unreachable => ("● unreachable, data stale", Role::Critical),
        HealthState::Denied => ("● credentials refused", Role::Critical),
        HealthState::Expired => ("● credentials expired — refresh them", Role::Critical),
        HealthState::NoCredentials => ("● no credentials found", Role::Critical),
    };
    Span::styled(text, theme.style(role))
}

/// A source's health in words (`ok`, `stale: why`, `error: why`, `starting`), coloured too:
/// the status bar's and the Overview's source headings' one wording.
pub fn source_health(verdict: &SourceVerdict, theme: &Theme) -> Span<'static> {
    let (text, role) = match verdict {
        SourceVerdict::Starting => ("● starting".to_string(), Role::Muted),
        SourceVerdict::Ok => ("● ok".to_string(), Role::Healthy),
        SourceVerdict::Stale(why) => (format!("● stale: {}", clean(why)), Role::Warning),
        SourceVerdict::Error(why) => (format!("● error: {}", clean(why)), Role::Critical),
    };
    Span::styled(text, theme.style(role))
}

/// What the status bar reads, travelling together from the app.
pub struct StatusView<'a> {
    /// The poller's latest data (health, calls, errors: the connection now).
    pub live: &'a Data,
    /// What the screens show (the recorded snapshot while time travelling).
    pub shown: &'a Data,
    pub past: Option<&'a PastMark>,
    pub queue: Option<&'a str>,
    pub info: &'a StatusInfo,
    pub now: Millis,
}

/// The status bar of `view`.
pub fn draw(frame: &mut Frame, area: Rect, view: &StatusView<'_>, theme: &Theme) {
    let mut first = badges(view, theme);
    where_from(&mut first, view, theme);
    let second = second_line(area.width, view, theme);
    frame.render_widget(
        Paragraph::new(vec![Line::from(first), Line::from(second)]),
        area,
    );
}

/// The first line's start: PAST/STALE, the title, READ-ONLY, a broken config and the warnings
/// count.
fn badges(view: &StatusView<'_>, theme: &Theme) -> Vec<Span<'static>> {
    let StatusView {
        live,
        past,
        queue,
        info,
        ..
    } = *view;
    let mut first = Vec::new();
    // First on the line, so a narrow terminal cuts the endpoint, never the badge.
    if let Some(p) = past {
        first.push(Span::styled(
            format!(" PAST {} ", date_time(Some(p.data_at))),
            theme.style(Role::Past),
        ));
    }
    if past.is_none() && stale(live, queue).is_some() {
        first.push(Span::styled(
            " STALE ",
            theme.style(Role::Warning).add_modifier(Modifier::REVERSED),
        ));
    }
    first.push(Span::styled(" quotatop ", theme.style(Role::Title)));
    // Before the endpoint, so a narrow terminal cuts that, never these: what a change would
    // meet is the status line's part dropped last.
    if info.read_only {
        first.push(Span::styled(" READ-ONLY ", theme.style(Role::Badge)));
        first.push(Span::raw(" "));
    }
    if info.config_broken.is_some() {
        first.push(Span::styled(
            "CONFIG BROKEN: no changes",
            theme.style(Role::Critical),
        ));
        first.push(Span::raw(" "));
    }
    if info.messages > 0 {
        first.push(Span::styled(
            format!(
                "{} warning{} (:messages) ",
                info.messages,
                if info.messages == 1 { "" } else { "s" }
            ),
            theme.style(Role::Warning),
        ));
    }
    first
}

/// The first line's rest: the store followed, the sources (or endpoint, profile, region).
fn where_from(first: &mut Vec<Span<'static>>, view: &StatusView<'_>, theme: &Theme) {
    let StatusView { live, info, .. } = *view;
    let muted = theme.style(Role::Muted);
    let snap = live.snapshot.as_ref();
    let source = snap.map_or(&info.source, |s| &s.source);
    let endpoint = source
        .endpoint
        .as_deref()
        .map_or_else(|| "AWS".to_string(), |e| clean(e).into_owned());
    if let Some(store) = &info.store {
        first.push(Span::styled("store ", muted));
        first.push(Span::raw(clean(store).into_owned()));
        first.push(Span::styled(" · ", muted));
    }
    match snap.filter(|s| !s.sources.is_empty()) {
        // Several sources: each one's health, in words (its region is on the Overview).
        Some(s) => {
            first.push(Span::styled("sources ", muted));
            for (i, src) in s.sources.iter().enumerate() {
                if i > 0 {
                    first.push(Span::styled(" · ", muted));
                }
                first.push(Span::raw(format!("{} ", clean(&src.name))));
                first.push(source_health(&src.verdict(&s.queues), theme));
            }
        }
        None => first.extend([
            Span::styled("endpoint ", muted),
            Span::raw(endpoint),
            Span::styled(" · profile ", muted),
            Span::raw(clean(source.profile.as_deref().unwrap_or("default")).into_owned()),
            Span::styled(" · region ", muted),
            Span::raw(clean(source.region.as_deref().unwrap_or("-")).into_owned()),
        ]),
    }
}

/// The second line: the queue, then what is shown (a past snapshot, history, live data or
/// nothing yet), the history setting and a stopped poller.
fn second_line(width: u16, view: &StatusView<'_>, theme: &Theme) -> Vec<Span<'static>> {
    let StatusView {
        live,
        shown,
        past,
        queue,
        info,
        now,
    } = *view;
    let muted = theme.style(Role::Muted);
    let snap = live.snapshot.as_ref();
    let q = shown.queue(queue).map(|(q, _)| q);
    let queue_name = q
        .map(QueueSnapshot::key)
        .or(queue.map(str::to_string))
        .unwrap_or_else(|| "-".to_string());
    let mut second = vec![
        Span::styled(" queue ", muted),
        Span::styled(clean(&queue_name).into_owned(), theme.style(Role::Accent)),
    ];
    match (snap, past) {
        (_, Some(p)) => past_spans(&mut second, p, q, snap, now, theme),
        (Some(s), None) if s.health.from_history => {
            // A warm start: what the journal held, until the first refresh replaces it; never
            // shown as live (no health, no calls) nor complete.
            second.push(Span::styled(" · ", muted));
            second.push(Span::styled(
                format!(
                    "from history, {} old",
                    duration(s.history_age(now).or(Some(0)))
                ),
                theme.style(Role::Past),
            ));
            second.push(Span::styled(" · waiting for the first refresh", muted));
        }
        (Some(s), None) => live_spans(&mut second, width, view, s, theme),
        (None, None) => {
            second.push(Span::styled(" · ", muted));
            second.push(health(HealthState::Starting, theme));
            second.push(Span::styled(" · waiting for the first refresh", muted));
        }
    }
    match info.history {
        History::Recording => {}
        History::Off => second.push(Span::styled(" · history off", muted)),
        History::Unavailable => second.push(Span::styled(
            " · history unavailable",
            theme.style(Role::Warning),
        )),
    }
    if live.source_closed {
        second.push(Span::styled(
            " · poller stopped",
            theme.style(Role::Critical),
        ));
    }
    second
}

/// A past snapshot: when it was recorded, whether it was partial, the way back to live.
fn past_spans(
    second: &mut Vec<Span<'static>>,
    p: &PastMark,
    q: Option<&QueueSnapshot>,
    snap: Option<&Snapshot>,
    now: Millis,
    theme: &Theme,
) {
    let muted = theme.style(Role::Muted);
    second.push(Span::styled(" · recorded ", muted));
    second.push(Span::styled(
        format!(
            "{} ago ({}/{})",
            duration(Some(now - p.taken_at)),
            p.position,
            p.total
        ),
        theme.style(Role::Past),
    ));
    // A partial snapshot was journaled as it was: never shown as complete.
    if let Some(listing) = q.and_then(|q| q.listing) {
        second.push(Span::styled(
            format!(
                " · partial: listing incomplete, {} jobs listed",
                count(listing.listed)
            ),
            theme.style(Role::Warning),
        ));
    } else if let Some((done, total)) = q.and_then(QueueSnapshot::describe_progress) {
        second.push(Span::styled(
            format!(
                " · partial: {} of {} jobs described",
                count(done),
                count(total)
            ),
            theme.style(Role::Warning),
        ));
    }
    second.push(Span::styled(
        format!(" · {} older {} newer {} live", p.older, p.newer, p.live),
        muted,
    ));
    if let Some(s) = snap {
        second.push(Span::styled(" · now ", muted));
        second.push(health(s.health.state, theme));
    }
}

/// Live data: how fresh, the calls and health, the progress of a partial view, the data's
/// clock and what went wrong last.
fn live_spans(
    second: &mut Vec<Span<'static>>,
    width: u16,
    view: &StatusView<'_>,
    s: &Snapshot,
    theme: &Theme,
) {
    let muted = theme.style(Role::Muted);
    let now = view.now;
    let q = view.live.queue(view.queue).map(|(q, _)| q);
    // Nothing has arrived yet (every call so far failed): not "updated", and nothing
    // to call stale.
    match q {
        // Following a store: the age of the recorder's snapshot, which is what the
        // console can vouch for.
        Some(_) if view.info.store.is_some() => {
            second.push(Span::styled(" · snapshot ", muted));
            second.push(Span::raw(format!(
                "{} old",
                duration(Some(now - s.taken_at))
            )));
        }
        Some(q) => {
            let refreshed = q.refreshed_at.unwrap_or(s.taken_at);
            second.push(Span::styled(" · updated ", muted));
            second.push(Span::raw(format!(
                "{} ago",
                duration(Some(now - refreshed))
            )));
        }
        None => second.push(Span::styled(" · no data yet", theme.style(Role::Warning))),
    }
    second.push(Span::styled(" · ", muted));
    second.push(Span::raw(format!(
        "{} calls/min",
        s.health.calls_last_minute
    )));
    second.push(Span::styled(" · ", muted));
    second.push(match (q, s.health.state) {
        (None, HealthState::Degraded) => Span::styled("● failing", theme.style(Role::Critical)),
        (None, HealthState::Unreachable) => {
            Span::styled("● unreachable", theme.style(Role::Critical))
        }
        (_, state) => health(state, theme),
    });
    live_progress(second, q, s, theme);
    // After the health, so a narrow terminal cuts this first.
    if let Some(skew) = q.and_then(clock_skew) {
        data_clock(second, (width, view.info.emulated_clock), now, skew, theme);
    }
    if let Some(reason) = q.and_then(|q| q.stale_reason.as_deref()) {
        second.push(Span::styled(
            format!(" · stale: {}", clean(reason)),
            theme.style(Role::Warning),
        ));
    } else if let Some(e) = s
        .health
        .last_error
        .as_deref()
        .filter(|_| s.health.state != HealthState::Healthy)
    {
        second.push(Span::styled(
            format!(" · {}", clean(e)),
            theme.style(Role::Warning),
        ));
    }
}

/// A partial view is never shown as complete: while the jobs are being listed, how many so
/// far; then how many of them are described; then how soon it is whole, and the throttling
/// and errors of the last minute.
fn live_progress(
    second: &mut Vec<Span<'static>>,
    q: Option<&QueueSnapshot>,
    s: &Snapshot,
    theme: &Theme,
) {
    if let Some(listing) = q.and_then(|q| q.listing) {
        second.push(Span::styled(
            format!(" · listing jobs: {} so far", count(listing.listed)),
            theme.style(Role::Warning),
        ));
    } else if let Some((done, total)) = q.and_then(QueueSnapshot::describe_progress) {
        second.push(Span::styled(
            format!(
                " · describing {} of {} jobs {}",
                count(done),
                count(total),
                gauge(done, total)
            ),
            theme.style(Role::Warning),
        ));
    }
    if let Some(secs) = s.health.complete_in_s {
        second.push(Span::styled(
            format!(
                " · complete view in ~{}",
                duration(Some(secs as Millis * 1000))
            ),
            theme.style(Role::Warning),
        ));
    }
    if s.health.throttled_last_minute > 0 {
        second.push(Span::styled(
            format!(" · {} throttled/min", s.health.throttled_last_minute),
            theme.style(Role::Warning),
        ));
    }
    let failed = s.health.errors_last_minute;
    if failed > 0 && s.health.state == HealthState::Healthy {
        // Attempts answered with an error that the refresh got past (retried, or a job gone
        // between its listing and its description): nothing for `:messages`, and not said as
        // an error beside "healthy".
        second.push(Span::styled(
            format!(
                " · {failed} call{} retried or not found/min",
                if failed == 1 { "" } else { "s" }
            ),
            theme.style(Role::Muted),
        ));
    } else if failed > 0 {
        second.push(Span::styled(
            format!(" · {failed} errors/min"),
            theme.style(Role::Critical),
        ));
    }
}

/// The data's clock when it differs from ours: whole or not at all (a time cut to "10:1"
/// reads as a wrong time), without its "(18m30s ahead)" when only that does not fit. An
/// emulator's clock (`emulated`) is said as its own, once, in the muted colour: a simulation's
/// time is no alarm.
fn data_clock(
    second: &mut Vec<Span<'static>>,
    (width, emulated): (u16, bool),
    now: Millis,
    skew: Millis,
    theme: &Theme,
) {
    let at = format!("{}Z", clock(Some(now + skew)));
    if emulated {
        const EMULATED: &str = " · emulator clock ";
        let used: usize = second.iter().map(Span::width).sum();
        if used + EMULATED.chars().count() + at.chars().count() <= usize::from(width) {
            second.push(Span::styled(EMULATED, theme.style(Role::Muted)));
            second.push(Span::styled(at, theme.style(Role::Muted)));
        }
        return;
    }
    const LABEL: &str = " · data clock ";
    let used: usize = second.iter().map(Span::width).sum();
    let full = format!(
        "{at} ({} {})",
        duration(Some(skew.abs())),
        if skew > 0 { "ahead" } else { "behind" }
    );
    let room = (width as usize).saturating_sub(used + LABEL.chars().count());
    if let Some(text) = [full, at].into_iter().find(|t| t.chars().count() <= room) {
        second.push(Span::styled(LABEL, theme.style(Role::Muted)));
        second.push(Span::styled(text, theme.style(Role::Warning)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_gauges() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_234), "1,234");
        assert_eq!(count(10_000), "10,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(gauge(0, 10_000), "[░░░░░░░░░░]");
        assert_eq!(gauge(1_234, 10_000), "[█░░░░░░░░░]");
        assert_eq!(gauge(9_999, 10_000), "[█████████░]");
        assert_eq!(gauge(0, 0), "[██████████]");
    }
}
