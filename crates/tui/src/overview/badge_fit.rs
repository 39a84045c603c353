//! A share's badges in a FLAGS cell too narrow for them whole: every lender and borrower shown,
//! their names cut in the middle ([`crate::text::elide`]) to share the room, before any is
//! folded into `+N`.

use quotatop_analysis::{BadgeKind, ShareBadges};

use crate::text::{clean, elide};

/// The least a name is cut to (`rese…h`): shorter says nothing, and `+N` says as much.
const MIN_NAME: usize = 6;

/// The badges of `b` in at most `width` columns with every borrow and lend kept, the names
/// cut to fit; `None` when even names of [`MIN_NAME`] do not fit (or there is no flow).
pub fn with_names_cut(b: &ShareBadges, width: usize) -> Option<Vec<(BadgeKind, String)>> {
    let fixed: Vec<(BadgeKind, String)> = b
        .labels()
        .into_iter()
        .filter(|(k, _)| matches!(k, BadgeKind::Loop | BadgeKind::Misconfigured))
        .map(|(k, l)| (k, clean(&l).into_owned()))
        .collect();
    let flows: Vec<(BadgeKind, &str, String, String)> = b
        .borrows_from
        .iter()
        .map(|(s, n)| (BadgeKind::Borrows, "←", s, n))
        .chain(b.lends_to.iter().map(|(s, n)| (BadgeKind::Lends, "→", s, n)))
        .map(|(k, arrow, s, n)| (k, arrow, clean(s).into_owned(), n.to_string()))
        .collect();
    if flows.is_empty() {
        return None;
    }
    let seps = fixed.len() + flows.len() - 1;
    let fixed_w: usize = fixed.iter().map(|(_, l)| l.chars().count()).sum();
    // `← ` and ` N` around each name.
    let around: usize = flows.iter().map(|(_, _, _, n)| 3 + n.len()).sum();
    let mut room = width.checked_sub(seps + fixed_w + around)?;
    // The room shared out, the shortest names first (what one does not need, the next gets).
    let mut order: Vec<usize> = (0..flows.len()).collect();
    order.sort_by_key(|&i| flows[i].2.chars().count());
    let mut give = vec![0; flows.len()];
    for (done, &i) in order.iter().enumerate() {
        let len = flows[i].2.chars().count();
        let share = room / (flows.len() - done);
        give[i] = len.min(share);
        if give[i] < len.min(MIN_NAME) {
            return None;
        }
        room -= give[i];
    }
    let cut = flows
        .iter()
        .zip(give)
        .map(|((k, arrow, name, n), w)| (*k, format!("{arrow} {} {n}", elide(name, w))));
    Some(fixed.into_iter().chain(cut).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(b: &ShareBadges, width: usize) -> Option<String> {
        with_names_cut(b, width).map(|ls| {
            ls.into_iter()
                .map(|(_, l)| l)
                .collect::<Vec<_>>()
                .join(" ")
        })
    }

    #[test]
    fn every_lender_is_kept_with_names_cut_to_share_the_room() {
        let b = ShareBadges {
            lends_to: vec![("team-16-vision".into(), 1), ("team-03-nlp".into(), 2)],
            ..Default::default()
        };
        // Whole: 34 columns.
        assert_eq!(
            text(&b, 34).as_deref(),
            Some("→ team-16-vision 1 → team-03-nlp 2")
        );
        let t = text(&b, 24).unwrap();
        assert!(t.chars().count() <= 24, "{t}");
        assert!(t.contains(" 1 → ") && t.ends_with(" 2"), "{t}");
        // Names of fewer than six columns: not this way.
        assert_eq!(text(&b, 20), None);
        // The short name stays whole while the long one is cut.
        let b = ShareBadges {
            loops: 1,
            borrows_from: vec![("team-03-search-relevance".into(), 2), ("nlp".into(), 1)],
            ..Default::default()
        };
        let t = text(&b, 26).unwrap();
        assert!(t.starts_with("LOOP 1 ← ") && t.ends_with(" 2 ← nlp 1"), "{t}");
        assert!(t.chars().count() <= 26, "{t}");
    }
}
