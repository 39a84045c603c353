//! The Overview's rows: the entries each view lists for a queue (those the filter keeps shown),
//! the queues grouped by source, the key a row is remembered by, and the attention panel's rows.

use super::super::data::Data;
use super::{Entry, Overview, View, attention, sort, table};

pub(super) fn entry_key(data: &Data, e: &Entry) -> Option<(String, String, String)> {
    let q = data.queues();
    match e {
        Entry::Source(si) => {
            let name = &data.snapshot.as_ref()?.sources.get(*si)?.name;
            Some((String::new(), "source".to_string(), name.clone()))
        }
        Entry::Queue(qi) => Some((q.get(*qi)?.key(), String::new(), String::new())),
        Entry::Share(qi, ui) => {
            let u = data.views.get(*qi)?.usage.get(*ui)?;
            Some((q.get(*qi)?.key(), u.share.clone(), String::new()))
        }
        Entry::Usage(qi, ui) => {
            let u = data.views.get(*qi)?.usage.get(*ui)?;
            Some((q.get(*qi)?.key(), u.share.clone(), u.instance_type.clone()))
        }
        Entry::Type(qi, ty) => Some((q.get(*qi)?.key(), "type".to_string(), ty.clone())),
    }
}

impl Overview {
    /// The rows of queue `qi` in `view`: its heading's entry, and the rows the filter keeps.
    pub(super) fn queue_rows(
        &self,
        data: &Data,
        qi: usize,
        view: View,
        entries: &mut Vec<Entry>,
    ) -> Option<(usize, Vec<usize>)> {
        let (q, v) = (data.queues().get(qi)?, data.views.get(qi)?);
        let head = entries.len();
        entries.push(Entry::Queue(qi));
        let filter = &self.list.filter;
        let matches = |u: &quotatop_analysis::ShareUsage| {
            filter.matches([
                u.share.as_str(),
                u.instance_type.as_str(),
                u.strategy.as_str(),
                q.name.as_str(),
                q.source.as_deref().unwrap_or(""),
            ])
        };
        let mut kept = Vec::new();
        let mut push = |e: Entry, keep: bool, entries: &mut Vec<Entry>| {
            entries.push(e);
            if keep {
                kept.push(entries.len() - 1);
            }
        };
        match view {
            View::Wide => {
                for ui in sort::shares(v, self.list.sort).into_iter().flat_map(|s| s.1) {
                    push(Entry::Usage(qi, ui), matches(&v.usage[ui]), entries);
                }
            }
            View::Compact => {
                for (first, rows) in sort::shares(v, self.list.sort) {
                    let share = &v.usage[first].share;
                    let keep = rows.iter().any(|&ui| matches(&v.usage[ui]));
                    push(Entry::Share(qi, first), keep, entries);
                    if self.expanded.contains(&(q.key(), share.clone())) {
                        for ui in rows {
                            push(Entry::Usage(qi, ui), keep, entries);
                        }
                    }
                }
            }
            View::ByType => {
                for (ty, rows) in table::types_of(q, &v.usage) {
                    let keep: Vec<bool> = rows.iter().map(|&ui| matches(&v.usage[ui])).collect();
                    push(Entry::Type(qi, ty), keep.contains(&true), entries);
                    for (ui, k) in rows.into_iter().zip(keep) {
                        push(Entry::Usage(qi, ui), k, entries);
                    }
                }
            }
        }
        Some((head, kept))
    }

    /// The panel's rows after its filter.
    pub(super) fn refresh_attention(&mut self, data: &Data) {
        self.attention = attention::items(data);
        let filter = &self.attention_list.filter;
        let shown: Vec<usize> = (0..self.attention.len())
            .filter(|&i| {
                attention::text_of(data, self.attention[i])
                    .is_some_and(|(tag, share, text)| filter.matches([tag, share, text]))
            })
            .collect();
        self.attention_list.set_rows(shown, |_| false);
    }
}

/// The Overview's groups of queue indices: one without a heading when there are no sources;
/// else one per source in the snapshot's order (its heading even when it has no queue), then
/// any queue of no known source.
pub(super) fn groups(data: &Data) -> Vec<(Option<usize>, Vec<usize>)> {
    let queues = data.queues();
    let sources = data.snapshot.as_ref().map_or(&[][..], |s| &s.sources[..]);
    if sources.is_empty() {
        return vec![(None, (0..queues.len()).collect())];
    }
    let of = |name: Option<&str>| -> Vec<usize> {
        let same = |(qi, q): (usize, &quotatop_model::QueueSnapshot)| {
            (q.source.as_deref() == name).then_some(qi)
        };
        queues.iter().enumerate().filter_map(same).collect()
    };
    let mut out: Vec<(Option<usize>, Vec<usize>)> = sources
        .iter()
        .enumerate()
        .map(|(si, s)| (Some(si), of(Some(&s.name))))
        .collect();
    let orphans: Vec<usize> = queues
        .iter()
        .enumerate()
        .filter(|(_, q)| {
            !sources
                .iter()
                .any(|s| q.source.as_deref() == Some(s.name.as_str()))
        })
        .map(|(qi, _)| qi)
        .collect();
    if !orphans.is_empty() {
        out.push((None, orphans));
    }
    out
}
