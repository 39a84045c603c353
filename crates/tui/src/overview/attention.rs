//! The Overview's triage parts: the "needs attention" panel (the list
//! [`quotatop_analysis::attention`] computes, one selectable line per item), the per-share badges
//! and the one-line legend of the table's glyphs and columns.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::super::data::Data;
use super::super::gauge::{BORROWED, IDLE, LENT, OWN};
use super::super::list::ListState;
use super::super::screen::{MARKER, Open};
use super::super::text::{clean, duration};
use super::super::theme::{Role, Theme};
use super::View;
use quotatop_analysis::{Attention, AttentionKind, AttentionTarget, BadgeKind, ShareBadges};

/// The panel's rows: every queue's attention items as (queue index, item index), the kind
/// that costs most now first (the analysis's order: loops, waiting work, shares at their
/// limit, then policy and misconfiguration; each queue's own order kept within a kind), the
/// items of a kind repeated over many shares as one row, its first ([`group`]).
pub fn items(data: &Data) -> Vec<(usize, usize)> {
    let mut all: Vec<(usize, usize)> = data
        .views
        .iter()
        .enumerate()
        .flat_map(|(qi, v)| (0..v.attention.len()).map(move |ai| (qi, ai)))
        .collect();
    all.sort_by_key(|&at| item(data, at).map(|a| a.kind));
    all.retain(|&at| !super::attention_group::folded(data, at));
    all
}

/// `51: 30 MISCONFIG · 12 LIMIT · 9 WAIT`: how many items, and of each kind, most urgent first
/// (a row standing for a group counts its items).
pub fn counts(data: &Data, rows: &[(usize, usize)]) -> String {
    let mut kinds: Vec<(AttentionKind, usize)> = Vec::new();
    for &at in rows {
        let Some(a) = item(data, at) else { continue };
        let many = super::attention_group::group(data, at).map_or(1, |g| g.items);
        match kinds.iter_mut().find(|(k, _)| *k == a.kind) {
            Some((_, n)) => *n += many,
            None => kinds.push((a.kind, many)),
        }
    }
    let total: usize = kinds.iter().map(|(_, n)| n).sum();
    kinds.sort();
    let parts: Vec<String> = kinds
        .iter()
        .map(|(k, n)| format!("{n} {}", k.tag()))
        .collect();
    if parts.is_empty() {
        "0".to_string()
    } else {
        format!("{total}: {}", parts.join(" · "))
    }
}

pub(super) fn item(data: &Data, at: (usize, usize)) -> Option<&Attention> {
    data.views.get(at.0)?.attention.get(at.1)
}

/// Where Enter on an item leads: its job, or its share.
pub fn open(data: &Data, at: (usize, usize)) -> Option<Open> {
    let queue = data.queues().get(at.0)?.key();
    Some(match &item(data, at)?.target {
        AttentionTarget::Job(id) => Open::Job {
            queue,
            id: id.clone(),
        },
        AttentionTarget::Share(share) => Open::Share {
            queue,
            share: share.clone(),
        },
    })
}

fn kind_role(kind: AttentionKind) -> Role {
    match kind {
        AttentionKind::OverBudget | AttentionKind::Loop => Role::Looping,
        AttentionKind::Misconfigured | AttentionKind::PolicyBreach => Role::Critical,
        AttentionKind::ImportantWait => Role::Warning,
        AttentionKind::AtLimit => Role::Borrowed,
    }
}

/// Width of the marker and tag before an item's text.
const LEAD: usize = 12;

/// `text` in at most `lines` lines of `width` characters, broken at spaces where it can be,
/// the last one cut with `…`.
fn wrap(text: &str, width: usize, lines: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    let mut rest: Vec<char> = text.chars().collect();
    while !rest.is_empty() && out.len() < lines {
        if rest.len() <= width {
            out.push(rest.iter().collect());
            rest.clear();
        } else if out.len() + 1 == lines {
            let mut cut: String = rest[..width - 1].iter().collect();
            cut.push('…');
            out.push(cut);
            rest.clear();
        } else {
            let at = rest[..=width]
                .iter()
                .rposition(|c| *c == ' ')
                .filter(|&i| i > width / 2)
                .unwrap_or(width);
            out.push(rest[..at].iter().collect());
            let skip = usize::from(rest.get(at) == Some(&' '));
            rest.drain(..at + skip);
        }
    }
    out
}

/// One item's text as the panel shows it: its queue when not the current one, what it is, and
/// how long it has waited.
fn item_line(
    data: &Data,
    current: Option<&str>,
    at: (usize, usize),
    requeue_key: &str,
) -> Option<(AttentionKind, String)> {
    let a = item(data, at)?;
    let mut text = String::new();
    if let Some(g) = super::attention_group::group(data, at) {
        text.push_str(&format!(
            "{} in {} share{}, the first: ",
            g.items,
            g.shares,
            if g.shares == 1 { "" } else { "s" }
        ));
    }
    if let Some(q) = data
        .queues()
        .get(at.0)
        .filter(|q| Some(q.key().as_str()) != current)
    {
        text.push_str(&format!("{}: ", clean(&q.key())));
    }
    text.push_str(&clean(&a.text));
    if a.kind == AttentionKind::Loop {
        text.push_str("; ");
        text.push_str(&quotatop_analysis::requeue_hint(requeue_key));
    }
    if let Some(w) = a.waiting_ms {
        text.push_str(&format!(" · waiting {}", duration(Some(w))));
    }
    Some((a.kind, text))
}

/// The most lines an item takes: its cause, at the end of its text, kept at 80 columns.
const ITEM_LINES: usize = 3;

/// Lines each item takes in `width` columns when `room` lines hold the `n` items: as many as
/// the longest needs (at most [`ITEM_LINES`]) while they all fit so, else fewer, at least one.
fn per_item(texts: &[Option<(AttentionKind, String)>], width: usize, room: usize) -> usize {
    let need = texts
        .iter()
        .flatten()
        .map(|(_, t)| wrap(t, width, usize::MAX).len())
        .max()
        .unwrap_or(1)
        .clamp(1, ITEM_LINES);
    (1..=need)
        .rev()
        .find(|per| per * texts.len() <= room)
        .unwrap_or(1)
}

/// Lines the panel takes in `width` columns and at most `max` lines, borders included: the
/// lines per item [`draw_panel`] lays out (up to [`ITEM_LINES`] when a line does not fit and
/// they all fit in `max`), else one per item (or one saying "nothing" when there is none), at
/// most `max`.
pub fn panel_height(
    data: &Data,
    current: Option<&str>,
    rows: &[(usize, usize)],
    requeue_key: &str,
    width: u16,
    max: u16,
) -> u16 {
    let current = data.queue(current).map(|(q, _)| q.key());
    let texts: Vec<Option<(AttentionKind, String)>> = rows
        .iter()
        .map(|&at| item_line(data, current.as_deref(), at, requeue_key))
        .collect();
    let width = (width as usize).saturating_sub(2 + LEAD);
    let lines = |per_item: usize| {
        u16::try_from((rows.len() * per_item).max(1))
            .unwrap_or(u16::MAX)
            .saturating_add(2)
    };
    let room = usize::from(max.saturating_sub(2));
    lines(per_item(&texts, width, room)).min(max)
}

/// What the panel draws, travelling together: the data, the current queue (items of another
/// queue name theirs), its items, its list and whether it has the focus.
pub struct Panel<'a> {
    pub data: &'a Data,
    pub current: Option<&'a str>,
    pub rows: &'a [(usize, usize)],
    pub list: &'a ListState,
    pub focused: bool,
    /// The key of the requeue dialog, which a loop's line names.
    pub requeue_key: &'a str,
}

/// The panel's title: the counts by kind, and what Tab does.
fn panel_title(p: &Panel, theme: &Theme) -> Line<'static> {
    let hint = if p.focused {
        "enter opens · tab: back to the table"
    } else {
        "tab to select"
    };
    Line::from(vec![
        Span::styled(" Needs attention ", theme.style(Role::Title)),
        Span::styled(
            format!("{}  {hint} ", counts(p.data, p.rows)),
            theme.style(Role::Muted),
        ),
    ])
}

/// The panel: a bordered list, the selected line marked when focused. When a line does not
/// fit, every item gets up to [`ITEM_LINES`], as long as they all fit so; else one each, cut
/// with `…`.
pub fn draw_panel(frame: &mut Frame, area: Rect, p: &Panel, theme: &Theme) {
    let current = p.data.queue(p.current).map(|(q, _)| q.key());
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Border))
        .title(panel_title(p, theme));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if p.rows.is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled(
                "  nothing: no loops, no misconfigured jobs, no important work waiting",
                theme.style(Role::Muted),
            )),
            inner,
        );
        return;
    }
    let width = (inner.width as usize).saturating_sub(LEAD);
    let texts: Vec<Option<(AttentionKind, String)>> = p
        .rows
        .iter()
        .map(|&at| item_line(p.data, current.as_deref(), at, p.requeue_key))
        .collect();
    let per_item = per_item(&texts, width, inner.height as usize);
    let (offset, visible) = p.list.visible((inner.height as usize / per_item).max(1));
    let mut lines = Vec::new();
    for (i, &r) in visible.iter().enumerate() {
        let Some(Some((kind, text))) = texts.get(r) else {
            continue;
        };
        let selected = p.focused && offset + i == p.list.selected;
        for (n, part) in wrap(text, width, per_item).into_iter().enumerate() {
            let lead = if n > 0 {
                Span::raw(" ".repeat(LEAD))
            } else {
                Span::styled(
                    format!("{}{:<9} ", if selected { MARKER } else { "  " }, kind.tag()),
                    theme.style(kind_role(*kind)),
                )
            };
            let line = Line::from(vec![lead, Span::raw(part)]);
            lines.push(if selected {
                line.style(theme.style(Role::Selected))
            } else {
                line
            });
        }
    }
    frame.render_widget(Paragraph::new(lines), inner);
    super::super::screen::scrollbar(
        frame,
        area,
        p.list.rows.len(),
        offset,
        (inner.height as usize / per_item).max(1),
        theme,
    );
}

fn badge_role(kind: BadgeKind) -> Role {
    match kind {
        BadgeKind::Loop => Role::Looping,
        BadgeKind::Misconfigured => Role::Critical,
        BadgeKind::Borrows => Role::Borrowed,
        BadgeKind::Lends => Role::Lent,
    }
}

/// A share's badges as styled spans in at most `width` characters (0: no limit): the badges
/// that fit, then `+N` for the N left out (a single badge too long for the width is cut with
/// `…`).
pub fn badge_spans(
    badges: Option<&ShareBadges>,
    width: usize,
    theme: &Theme,
) -> Vec<Span<'static>> {
    let Some(b) = badges else {
        return Vec::new();
    };
    let whole: Vec<(BadgeKind, String)> = b
        .labels()
        .into_iter()
        .map(|(k, l)| (k, clean(&l).into_owned()))
        .collect();
    let whole_w = whole.iter().map(|(_, l)| l.chars().count() + 1).sum::<usize>();
    // Too narrow for them whole: every lender and borrower still shown, names cut, when they
    // fit so; else the first badges and `+N`.
    let labels = match width {
        w if w > 0 && whole_w.saturating_sub(1) > w => {
            super::badge_fit::with_names_cut(b, w).unwrap_or(whole)
        }
        _ => whole,
    };
    let mut out = Vec::new();
    let mut used = 0;
    for (i, (kind, label)) in labels.iter().enumerate() {
        let sep = usize::from(i > 0);
        let n = label.chars().count();
        let left = labels.len() - i - 1;
        // Room for this one, and for the `+N` of those after it.
        let tail = if left > 0 {
            1 + format!("+{left}").len()
        } else {
            0
        };
        if width > 0 && used + sep + n + tail > width {
            let more = format!("+{}", labels.len() - i);
            if i == 0 {
                out.push(Span::styled(
                    first_badge(*kind, label, width),
                    theme.style(badge_role(*kind)),
                ));
                if left > 0 && !matches!(kind, BadgeKind::Loop | BadgeKind::Misconfigured) {
                    let rest = format!(" +{left}");
                    let shown = out.iter().map(|s| s.content.chars().count()).sum::<usize>();
                    if shown + rest.len() <= width {
                        out.push(Span::styled(rest, theme.style(Role::Muted)));
                    }
                }
            } else if used + 1 + more.len() <= width {
                out.push(Span::styled(format!(" {more}"), theme.style(Role::Muted)));
            }
            break;
        }
        if sep == 1 {
            out.push(Span::raw(" "));
        }
        out.push(Span::styled(label.clone(), theme.style(badge_role(*kind))));
        used += sep + n;
    }
    out
}

/// A first badge too long for `width`: a borrow or a lend without the share's name (`← 2`; the
/// caller adds `+N` for the others when it fits), never cut mid-name; another badge cut with
/// `…`.
fn first_badge(kind: BadgeKind, label: &str, width: usize) -> String {
    let parts: Vec<&str> = label.split(' ').collect();
    if let (BadgeKind::Borrows | BadgeKind::Lends, [arrow, .., n]) = (kind, parts.as_slice()) {
        let short = format!("{arrow} {n}");
        if short.chars().count() <= width {
            return short;
        }
    }
    let cut: String = label.chars().take(width.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// The widest badge text of any share (for the column's width).
pub fn badge_width(data: &Data) -> usize {
    data.views
        .iter()
        .flat_map(|v| v.badges.values())
        .map(|b| {
            let labels = b.labels();
            labels.iter().map(|(_, l)| l.chars().count()).sum::<usize>()
                + labels.len().saturating_sub(1)
        })
        .max()
        .unwrap_or(0)
}

/// The least width that shows any share's first badge whole, with `+N` for the rest (at most
/// 16: a longer first badge, a borrow from a long share name, is cut in the middle).
pub fn badge_min(data: &Data) -> usize {
    data.views
        .iter()
        .flat_map(|v| v.badges.values())
        .map(|b| {
            let labels = b.labels();
            let more = if labels.len() > 1 {
                1 + format!("+{}", labels.len() - 1).len()
            } else {
                0
            };
            labels.first().map_or(0, |(_, l)| clean(l).chars().count()) + more
        })
        .max()
        .unwrap_or(0)
        .min(16)
}

/// The legend of the bars and columns of `view`: the longest wording that fits `width`.
pub fn legend(width: u16, view: View, theme: &Theme) -> Line<'static> {
    let muted = theme.style(Role::Muted);
    let first = match view {
        View::Compact => {
            " (in GPUs, one scale for all shares) · TIGHTEST its type nearest its limit · \
             WAIT runnable jobs · PRE preemptions · FLAGS: ← borrows from, → lends to, +N more \
             not shown"
        }
        View::Wide => {
            " (one scale per instance type) · ISP in-share preemption · WAIT runnable jobs · \
             PRE preemptions · FLAGS: ← borrows from, → lends to, +N more not shown"
        }
        View::ByType => {
            " (one scale per type) · USED instances / the share's limit (a type's: / its \
             capacity)"
        }
    };
    // `+N` (badges left out of a narrow FLAGS cell) is said while anything of FLAGS is.
    const WORDINGS: [(&str, &str); 5] = [
        (
            " ",
            " · ISP in-share preemption · WAIT runnable jobs · PRE preemptions · ← from → to, +N more",
        ),
        (
            "",
            " · ISP in-share preemption · WAIT runnable · PRE preemptions · ← from → to +N more",
        ),
        ("", " ISP:in-share preempt WAIT:runnable PRE:preempted +N:more"),
        ("", " ISP:in-share WAIT:runnable PRE:preempted +N:more"),
        ("", " ISP:in-share preempt WAIT:runnable PRE:preempted"),
    ];
    // The by-type view has neither ISP, WAIT nor PRE.
    let wordings = if view == View::ByType {
        [
            (" ", first),
            (" ", " · USED instances / limit (a type's: / capacity)"),
            ("", " USED:instances/limit"),
            ("", ""),
            ("", ""),
            ("", ""),
        ]
    } else {
        [
            (" ", first),
            WORDINGS[0],
            WORDINGS[1],
            WORDINGS[2],
            WORDINGS[3],
            WORDINGS[4],
        ]
    };
    let glyphs = [
        (OWN, Role::Own, "own "),
        (BORROWED, Role::Borrowed, "borrowed "),
        (LENT, Role::Lent, "lent "),
        (IDLE, Role::Idle, "idle"),
    ];
    let fits = |sep: &str, words: &str| {
        let n = 1
            + glyphs
                .iter()
                .map(|(_, _, w)| 1 + sep.len() + w.len())
                .sum::<usize>()
            + words.chars().count();
        n <= width as usize
    };
    let (sep, words) = wordings
        .iter()
        .find(|(sep, words)| fits(sep, words))
        .copied()
        .unwrap_or(wordings[wordings.len() - 1]);
    let mut spans = vec![Span::raw(" ")];
    for (g, role, word) in glyphs {
        spans.push(Span::styled(g.to_string(), theme.style(role)));
        spans.push(Span::styled(format!("{sep}{word}"), muted));
    }
    spans.push(Span::styled(words, muted));
    Line::from(spans)
}

/// An item's tag, share and text (what `/` matches).
pub fn text_of(data: &Data, at: (usize, usize)) -> Option<(&'static str, &str, &str)> {
    let a = item(data, at)?;
    Some((a.kind.tag(), a.share.as_str(), a.text.as_str()))
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_breaks_at_spaces_and_cuts_the_last_line() {
        assert_eq!(wrap("one two three", 20, 2), vec!["one two three"]);
        assert_eq!(wrap("one two three", 9, 2), vec!["one two", "three"]);
        assert_eq!(
            wrap("one two three four", 9, 2),
            vec!["one two", "three fo…"]
        );
        assert_eq!(wrap("abcdefghij", 4, 1), vec!["abc…"]);
    }

    /// `+N` in FLAGS (badges left out) is in the legend at 80, 120 and 200 columns.
    #[test]
    fn the_legend_says_what_plus_n_is() {
        use super::{Theme, View, legend};
        for (width, view) in [(80, View::Wide), (120, View::Wide), (200, View::Compact)] {
            let line: String = legend(width, view, &Theme::dark())
                .spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect();
            assert!(line.contains("+N"), "{width}: {line}");
            assert!(line.chars().count() <= usize::from(width), "{width}: {line}");
        }
    }

    #[test]
    fn badges_that_do_not_fit_are_counted() {
        use super::{ShareBadges, Theme, badge_spans};
        let b = ShareBadges {
            loops: 1,
            borrows_from: vec![("prod".into(), 4), ("nlp".into(), 2)],
            ..Default::default()
        };
        let text = |w| -> String {
            badge_spans(Some(&b), w, &Theme::dark())
                .iter()
                .map(|s| s.content.as_ref())
                .collect()
        };
        assert_eq!(text(0), "LOOP 1 ← prod 4 ← nlp 2");
        assert_eq!(text(18), "LOOP 1 ← prod 4 +1");
        assert_eq!(text(11), "LOOP 1 +2");
        assert_eq!(text(4), "LOO…");
        // A borrow whose lender's name does not fit: the count without the name.
        let b = ShareBadges {
            borrows_from: vec![("team-03-search-relevance".into(), 2), ("nlp".into(), 1)],
            ..Default::default()
        };
        let text = |w| -> String {
            badge_spans(Some(&b), w, &Theme::dark())
                .iter()
                .map(|s| s.content.as_ref())
                .collect()
        };
        // Room for both with the long name cut: both lenders shown.
        let both = text(20);
        assert!(both.ends_with(" 2 ← nlp 1") && both.contains('…'), "{both}");
        assert_eq!(text(12), "← 2 +1");
        assert_eq!(text(4), "← 2");
    }

    /// Items of every queue, the most urgent kind first across queues, and the title's counts
    /// in that order.
    #[test]
    fn items_are_most_urgent_first_and_counted_by_kind() {
        use super::super::super::data::{Data, QueueView};
        use super::{counts, items};
        use quotatop_analysis::{Attention, AttentionKind, AttentionTarget};
        let item = |kind| Attention {
            kind,
            target: AttentionTarget::Share("s".into()),
            share: "s".into(),
            text: "t".into(),
            waiting_ms: None,
        };
        let view = |kinds: Vec<AttentionKind>| QueueView {
            attention: kinds.into_iter().map(item).collect(),
            ..QueueView::default()
        };
        let data = Data {
            views: vec![
                view(vec![AttentionKind::AtLimit, AttentionKind::AtLimit]),
                view(vec![AttentionKind::Loop]),
            ],
            ..Data::default()
        };
        let rows = items(&data);
        assert_eq!(rows, vec![(1, 0), (0, 0), (0, 1)]);
        assert_eq!(counts(&data, &rows), "3: 1 LOOP · 2 LIMIT");
        assert_eq!(counts(&data, &[]), "0");
    }
}
