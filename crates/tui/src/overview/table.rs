//! The Overview's tables: the columns of each view (sized by [`screen::layout`]: names and
//! instance types whole, then bars and sparklines grow, the least needed columns dropped on a
//! narrow screen) in [`columns`], and the cells of each kind of row in [`cells`]. Here, what
//! both read: the rows of each share and of each instance type, an instance type's figures,
//! the borrows-from / lends-to text and the tightest type's label.

mod cells;
mod columns;

pub use cells::{by_type_cells, share_cells, type_heading_cells, type_row_cells, wide_cells};
pub use columns::columns;

use ratatui::widgets::Block;

use super::super::data::Data;
use super::super::screen;
use super::super::text::clean;
use super::super::theme::Theme;
use super::View;
use quotatop_analysis::{ShareUsage, share_totals};
use quotatop_model::QueueSnapshot;

/// What drawing the table needs, travelling together.
pub struct Drawn<'a> {
    pub view: View,
    pub block: Block<'a>,
    pub data: &'a Data,
    pub theme: &'a Theme,
}

/// What building a row needs: the data, the column widths [`screen::layout`] gave, the theme.
pub struct RowCtx<'a> {
    pub data: &'a Data,
    pub widths: &'a [u16],
    pub theme: &'a Theme,
}

impl RowCtx<'_> {
    fn w(&self, col: usize) -> usize {
        usize::from(self.widths.get(col).copied().unwrap_or(0))
    }
}

/// Each share's first usage row and all its rows, in the rows' order.
pub fn shares_of(usage: &[ShareUsage]) -> Vec<(usize, Vec<usize>)> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for (ui, u) in usage.iter().enumerate() {
        match out.iter_mut().find(|(f, _)| usage[*f].share == u.share) {
            Some((_, rows)) => rows.push(ui),
            None => out.push((ui, vec![ui])),
        }
    }
    out
}

/// Each instance type (the environment's, in its order, then any other a share has) and the
/// usage rows of it, the busiest share first.
pub fn types_of(q: &QueueSnapshot, usage: &[ShareUsage]) -> Vec<(String, Vec<usize>)> {
    let mut types: Vec<String> = q
        .environment
        .capacity
        .iter()
        .map(|c| c.instance_type.clone())
        .collect();
    // A share with no limits has a row of no type: no type's heading.
    for u in usage.iter().filter(|u| !u.instance_type.is_empty()) {
        if !types.contains(&u.instance_type) {
            types.push(u.instance_type.clone());
        }
    }
    types
        .into_iter()
        .map(|ty| {
            let mut rows: Vec<usize> = (0..usage.len())
                .filter(|&i| usage[i].instance_type == ty)
                .collect();
            rows.sort_by_key(|&i| std::cmp::Reverse((usage[i].used, usage[i].limit)));
            (ty, rows)
        })
        .collect()
}

/// An instance type's use in a queue: instances in use, of them borrowed, and the
/// environment's capacity (its use, when the environment has no limit for it).
fn type_figures(q: &QueueSnapshot, usage: &[ShareUsage], ty: &str) -> (u32, u32, u32) {
    let rows = || usage.iter().filter(|u| u.instance_type == ty);
    let used: u32 = rows().map(|u| u.used).sum();
    let borrowed: u32 = rows().map(|u| u.borrowed).sum();
    let capacity = q
        .environment
        .capacity
        .iter()
        .find(|c| c.instance_type == ty)
        .map_or(used, |c| c.max_capacity);
    (used, borrowed.min(used), capacity)
}

/// Whom a share borrows from or lends to, in at most `width` characters: `team-a 2, team-b 1`
/// (the instances of each), the names that fit whole then `+N` for those left out, or
/// `3 from 2 shares` (`word`: `from` or `to`) or just `3` when not even one fits; empty for
/// none.
pub fn flow_text(total: u32, parts: &[(String, u32)], word: &str, width: usize) -> String {
    if total == 0 {
        return String::new();
    }
    let named: Vec<String> = parts
        .iter()
        .map(|(s, n)| format!("{} {n}", clean(s)))
        .collect();
    for shown in (1..=named.len()).rev() {
        let left = named.len() - shown;
        let mut t = named[..shown].join(", ");
        if left > 0 {
            t.push_str(&format!(" +{left}"));
        }
        if t.chars().count() <= width {
            return t;
        }
    }
    let short = match parts.len() {
        1 => format!("{total} {word} 1 share"),
        n => format!("{total} {word} {n} shares"),
    };
    super::super::text::first_fitting(&[short, total.to_string()], width)
}

/// `p5.48xlarge 4/4`: a share's most constrained instance type and its use of it.
fn tightest_label(usage: &[ShareUsage], share: &str) -> String {
    share_totals(usage, share)
        .tightest
        .and_then(|i| usage.get(i))
        .filter(|u| !u.instance_type.is_empty())
        .map_or_else(
            || {
                let limitless = usage
                    .iter()
                    .any(|u| u.share == share && u.instance_type.is_empty());
                if limitless { "no limits" } else { "" }.to_string()
            },
            |u| {
            format!(
                "{} {}/{}",
                screen::short_type(&u.instance_type),
                u.used,
                u.limit
            )
            },
        )
}


#[cfg(test)]
mod tests {
    use super::flow_text;

    #[test]
    fn flows_drop_names_whole_and_count_them() {
        let parts = vec![("team-a".to_string(), 2), ("team-b".to_string(), 1)];
        assert_eq!(flow_text(3, &parts, "from", 40), "team-a 2, team-b 1");
        assert_eq!(flow_text(3, &parts, "from", 18), "team-a 2, team-b 1");
        assert_eq!(flow_text(3, &parts, "from", 17), "team-a 2 +1");
        assert_eq!(flow_text(3, &parts, "to", 11), "team-a 2 +1");
        let long = vec![("team-long-name".to_string(), 2), ("team-b".to_string(), 1)];
        assert_eq!(flow_text(3, &long, "to", 13), "3 to 2 shares");
        assert_eq!(flow_text(3, &parts, "to", 10), "3");
        assert_eq!(flow_text(0, &parts, "to", 40), "");
    }
}
