//! Marks (k9s): jobs the operator picked for one action on them all — `p` changes every marked
//! job's priority, `ctrl-k` terminates them, `R` requeues them. Kept by queue and job id, in
//! the app, so they survive refreshes, sorting, filters and moving between Jobs and
//! Preemptions; a job that leaves the data keeps its mark until the marks are cleared (the
//! dialogs say when a marked job is no longer in the data, nothing is skipped in silence).

use std::collections::BTreeSet;

/// The marked jobs, by (queue key, job id).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks(BTreeSet<(String, String)>);

impl Marks {
    /// Marks the job, or unmarks it when it was marked; whether it is marked now.
    pub fn toggle(&mut self, queue: &str, id: &str) -> bool {
        let key = (queue.to_string(), id.to_string());
        if self.0.remove(&key) {
            false
        } else {
            self.0.insert(key);
            true
        }
    }

    /// Marks every one of `jobs` (those a screen shows); how many were newly marked.
    pub fn mark_all<'a>(&mut self, jobs: impl IntoIterator<Item = (&'a str, &'a str)>) -> usize {
        jobs.into_iter()
            .filter(|(q, id)| self.0.insert((q.to_string(), id.to_string())))
            .count()
    }

    /// Unmarks the jobs of `queue` (all of them: `None`); how many were marked.
    pub fn clear(&mut self, queue: Option<&str>) -> usize {
        let before = self.0.len();
        match queue {
            Some(q) => self.0.retain(|(mq, _)| mq != q),
            None => self.0.clear(),
        }
        before - self.0.len()
    }

    /// Unmarks one job.
    pub fn unmark(&mut self, queue: &str, id: &str) {
        self.0.remove(&(queue.to_string(), id.to_string()));
    }

    pub fn contains(&self, queue: &str, id: &str) -> bool {
        self.0.contains(&(queue.to_string(), id.to_string()))
    }

    /// The marked job ids of `queue`, in id order.
    pub fn of_queue<'a>(&'a self, queue: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(q, _)| q == queue)
            .map(|(_, id)| id.as_str())
    }

    /// How many jobs of `queue` are marked.
    pub fn count(&self, queue: &str) -> usize {
        self.of_queue(queue).count()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_toggle_per_queue_and_clear() {
        let mut m = Marks::default();
        assert!(m.toggle("q", "a"));
        assert!(m.toggle("q", "b"));
        assert!(m.toggle("other", "a"));
        assert!(!m.toggle("q", "b"));
        assert_eq!(m.count("q"), 1);
        assert_eq!(m.mark_all([("q", "a"), ("q", "c")]), 1);
        assert_eq!(m.of_queue("q").collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(m.clear(Some("q")), 2);
        assert!(m.contains("other", "a"));
        assert_eq!(m.clear(None), 1);
        assert!(m.is_empty());
    }
}
