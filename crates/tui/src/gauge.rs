//! The two small graphics of the overview: a usage bar split into own use / borrowed / lent /
//! idle, and a sparkline of use over the session. Both are styled spans, so they sit in table
//! cells; each segment has its own glyph, so they read without colour too.

use std::collections::VecDeque;

use ratatui::text::{Line, Span};

use super::theme::{Role, Theme};
use quotatop_analysis::{ShareTotals, ShareUsage};

pub const OWN: char = '█';
pub const BORROWED: char = '▓';
pub const LENT: char = '▒';
pub const IDLE: char = '░';

/// Splits `width` cells over `parts` by largest remainder; a non-zero part gets at least one
/// cell when there is room.
fn apportion(parts: &[u32], width: usize) -> Vec<usize> {
    let total: u64 = parts.iter().map(|&p| p as u64).sum();
    if total == 0 || width == 0 {
        return vec![0; parts.len()];
    }
    let exact: Vec<f64> = parts
        .iter()
        .map(|&p| p as f64 * width as f64 / total as f64)
        .collect();
    let mut cells: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut left = width - cells.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| {
        let ra = exact[a] - exact[a].floor();
        let rb = exact[b] - exact[b].floor();
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &i in &order {
        if left == 0 {
            break;
        }
        if exact[i] > cells[i] as f64 {
            cells[i] += 1;
            left -= 1;
        }
    }
    // Give tiny non-zero parts a visible cell, taken from the largest part.
    for i in 0..parts.len() {
        if parts[i] == 0 || cells[i] > 0 {
            continue;
        }
        if let Some(big) = (0..parts.len())
            .max_by_key(|&j| cells[j])
            .filter(|&j| cells[j] > 1)
        {
            cells[big] -= 1;
            cells[i] += 1;
        }
    }
    cells
}

/// The usage bar of one share × instance type: own use, borrowed, lent, idle (in that order).
/// Its full length (limit plus what it borrows) is drawn against `scale` instances, so bars of
/// one instance type on a common scale compare: a share of 2 fills half of what one of 4 does.
/// A `scale` of 0 (or less than the bar's own total) scales the bar to itself.
pub fn usage_bar(u: &ShareUsage, width: usize, scale: u32, theme: &Theme) -> Line<'static> {
    bar(
        [u.own_used, u.borrowed, u.lent, u.idle],
        width,
        scale,
        theme,
    )
}

/// A share's one-row bar over all its instance types, in GPUs ([`ShareTotals`]), against
/// `scale` GPUs (the longest share's of the queue).
pub fn totals_bar(t: &ShareTotals, width: usize, scale: u32, theme: &Theme) -> Line<'static> {
    bar(
        [t.own_used, t.borrowed, t.lent, t.idle],
        width,
        scale,
        theme,
    )
}

/// The bar of `parts` (own use, borrowed, lent, idle), as [`usage_bar`] draws it.
fn bar(parts: [u32; 4], width: usize, scale: u32, theme: &Theme) -> Line<'static> {
    let total: u32 = parts.iter().sum();
    let scale = scale.max(total);
    let length = if scale == 0 {
        width
    } else {
        // Rounded, and at least one cell for a non-empty bar.
        ((total as u64 * width as u64 + scale as u64 / 2) / scale as u64).max(u64::from(total > 0))
            as usize
    };
    let cells = apportion(&parts, length.min(width));
    let glyphs = [
        (OWN, Role::Own),
        (BORROWED, Role::Borrowed),
        (LENT, Role::Lent),
        (IDLE, Role::Idle),
    ];
    let mut spans: Vec<Span<'static>> = cells
        .iter()
        .zip(glyphs)
        .filter(|(n, _)| **n > 0)
        .map(|(&n, (g, role))| Span::styled(g.to_string().repeat(n), theme.style(role)))
        .collect();
    let drawn: usize = cells.iter().sum();
    if drawn < width {
        spans.push(Span::raw(" ".repeat(width - drawn)));
    }
    Line::from(spans)
}

/// The common scale of the bars of instance type `ty`: the longest bar's total (limit plus
/// borrowed) among `rows`.
pub fn type_scale<'a>(rows: impl IntoIterator<Item = &'a ShareUsage>, ty: &str) -> u32 {
    rows.into_iter()
        .filter(|u| u.instance_type == ty)
        .map(|u| u.own_used + u.borrowed + u.lent + u.idle)
        .max()
        .unwrap_or(0)
}

const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The last `width` samples scaled to `max` (at least 1).
pub fn sparkline(
    samples: Option<&VecDeque<u32>>,
    max: u32,
    width: usize,
    theme: &Theme,
) -> Span<'static> {
    let Some(samples) = samples else {
        return Span::raw("");
    };
    let max = max.max(1) as f64;
    let skip = samples.len().saturating_sub(width);
    let text: String = samples
        .iter()
        .skip(skip)
        .map(|&v| {
            let level = ((v as f64 / max) * (LEVELS.len() - 1) as f64).round() as usize;
            LEVELS[level.min(LEVELS.len() - 1)]
        })
        .collect();
    Span::styled(text, theme.style(Role::Spark))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_model::SharingStrategy;

    fn usage(own: u32, borrowed: u32, lent: u32, idle: u32) -> ShareUsage {
        ShareUsage {
            share: "s".into(),
            instance_type: "t".into(),
            strategy: SharingStrategy::LendAndBorrow,
            limit: own + lent + idle,
            used: own + borrowed,
            own_used: own,
            borrowed,
            idle,
            lent,
            borrowed_from: vec![],
            lent_to: vec![],
        }
    }

    #[test]
    fn apportion_fills_the_width_and_shows_small_parts() {
        assert_eq!(apportion(&[4, 2, 0, 2], 16), vec![8, 4, 0, 4]);
        assert_eq!(apportion(&[99, 1, 0, 0], 10).iter().sum::<usize>(), 10);
        assert_eq!(apportion(&[99, 1, 0, 0], 10)[1], 1);
        assert_eq!(apportion(&[0, 0, 0, 0], 10), vec![0, 0, 0, 0]);
    }

    #[test]
    fn usage_bar_segments_carry_their_roles() {
        let theme = Theme::dark();
        let line = usage_bar(&usage(2, 1, 1, 0), 8, 0, &theme);
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "████▓▓▒▒");
        assert_eq!(line.spans[0].style, theme.style(Role::Own));
        assert_eq!(line.spans[1].style, theme.style(Role::Borrowed));
        assert_eq!(line.spans[2].style, theme.style(Role::Lent));
    }

    #[test]
    fn usage_bars_of_one_type_share_a_scale() {
        let theme = Theme::dark();
        let text = |l: Line| -> String { l.spans.iter().map(|s| s.content.as_ref()).collect() };
        let small = usage(2, 0, 0, 0);
        let big = usage(4, 0, 0, 0);
        let scale = type_scale([&small, &big], "t");
        assert_eq!(scale, 4);
        assert_eq!(text(usage_bar(&small, 8, scale, &theme)), "████    ");
        assert_eq!(text(usage_bar(&big, 8, scale, &theme)), "████████");
        // A tiny share still gets a cell.
        assert_eq!(
            text(usage_bar(&usage(1, 0, 0, 0), 8, 100, &theme)),
            "█       "
        );
    }

    #[test]
    fn sparkline_scales_to_the_max() {
        let theme = Theme::dark();
        let s: VecDeque<u32> = [0, 2, 4, 8].into_iter().collect();
        assert_eq!(sparkline(Some(&s), 8, 10, &theme).content, "▁▃▅█");
        assert_eq!(sparkline(Some(&s), 8, 2, &theme).content, "▅█");
    }
}
