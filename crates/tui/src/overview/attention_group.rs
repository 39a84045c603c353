//! Repeats in the attention panel: the items of one kind over many shares (20 MISCONFIG, one
//! per share) are one row, the first of them, saying how many and over how many shares
//! ("8 in 4 shares, the first: …"), so what costs now stays in sight. Loops and jobs over
//! their budget are never folded: each burns GPU-hours and has its own remedy (`R`).

use std::collections::BTreeSet;

use quotatop_analysis::AttentionKind;

use super::attention::item;
use crate::data::Data;

/// More items of a kind than this are one row.
pub const GROUP_OVER: usize = 3;

/// A group's size: its items and the shares they are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub items: usize,
    pub shares: usize,
}

/// The items of `kind`, in the panel's order (queue, then the queue's own order), when they
/// are a group; else none.
fn members(data: &Data, kind: AttentionKind) -> Vec<(usize, usize)> {
    if matches!(kind, AttentionKind::Loop | AttentionKind::OverBudget) {
        return Vec::new();
    }
    let all: Vec<(usize, usize)> = data
        .views
        .iter()
        .enumerate()
        .flat_map(|(qi, v)| {
            v.attention
                .iter()
                .enumerate()
                .filter(move |(_, a)| a.kind == kind)
                .map(move |(ai, _)| (qi, ai))
        })
        .collect();
    if all.len() > GROUP_OVER {
        all
    } else {
        Vec::new()
    }
}

/// The group `at` heads (the first item of a kind folded into one row).
pub fn group(data: &Data, at: (usize, usize)) -> Option<Group> {
    let m = members(data, item(data, at)?.kind);
    if m.first() != Some(&at) {
        return None;
    }
    let shares: BTreeSet<(usize, &str)> = m
        .iter()
        .filter_map(|&(qi, ai)| Some((qi, item(data, (qi, ai))?.share.as_str())))
        .collect();
    Some(Group {
        items: m.len(),
        shares: shares.len(),
    })
}

/// Whether `at` is folded into the row of the group it belongs to (and not its first).
pub fn folded(data: &Data, at: (usize, usize)) -> bool {
    item(data, at).is_some_and(|a| {
        let m = members(data, a.kind);
        m.first().is_some_and(|first| *first != at) && m.contains(&at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::QueueView;
    use crate::overview::attention::{counts, items};
    use quotatop_analysis::{Attention, AttentionTarget};

    fn item_of(kind: AttentionKind, share: &str) -> Attention {
        Attention {
            kind,
            target: AttentionTarget::Share(share.into()),
            share: share.into(),
            text: format!("{share} text"),
            waiting_ms: None,
        }
    }

    /// Twenty misconfigured shares, a wait and a loop: the loop and the wait first, the
    /// twenty one row, the title still counting every item.
    #[test]
    fn repeats_over_many_shares_are_one_row_after_what_costs_now() {
        let mut attention: Vec<Attention> = (0..20)
            .map(|i| item_of(AttentionKind::Misconfigured, &format!("team-{i:02}")))
            .collect();
        attention.push(item_of(AttentionKind::ImportantWait, "team-03"));
        attention.push(item_of(AttentionKind::Loop, "team-07"));
        attention.sort_by_key(|a| a.kind);
        let data = Data {
            views: vec![QueueView {
                attention,
                ..QueueView::default()
            }],
            ..Data::default()
        };
        let rows = items(&data);
        let kinds: Vec<AttentionKind> = rows.iter().map(|&at| item(&data, at).unwrap().kind).collect();
        assert_eq!(
            kinds,
            vec![
                AttentionKind::Loop,
                AttentionKind::ImportantWait,
                AttentionKind::Misconfigured
            ]
        );
        assert_eq!(
            group(&data, rows[2]),
            Some(Group {
                items: 20,
                shares: 20
            })
        );
        assert_eq!(group(&data, rows[0]), None);
        assert_eq!(counts(&data, &rows), "22: 1 LOOP · 1 WAIT · 20 MISCONFIG");
    }
}
