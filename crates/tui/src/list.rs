//! Selection, scrolling, filter and sort of one list on a screen. Rows are indices into data the
//! screen owns elsewhere; they are recomputed when data, filter or sort change (not per frame), so
//! drawing builds only the visible rows.

use std::cell::Cell;

/// `/` filter text; a leading `!` inverts it. Case-insensitive substring match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub text: String,
}

impl Filter {
    pub fn is_active(&self) -> bool {
        !self.needle().0.is_empty()
    }

    fn needle(&self) -> (String, bool) {
        match self.text.strip_prefix('!') {
            Some(rest) => (rest.to_lowercase(), true),
            None => (self.text.to_lowercase(), false),
        }
    }

    /// Whether a row whose searchable fields are `fields` passes.
    pub fn matches<'a>(&self, fields: impl IntoIterator<Item = &'a str>) -> bool {
        let (needle, inverted) = self.needle();
        if needle.is_empty() {
            return true;
        }
        let hit = fields
            .into_iter()
            .any(|f| f.to_lowercase().contains(&needle));
        hit != inverted
    }
}

/// Sort column (index into the screen's column list) and direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sort {
    pub column: usize,
    pub descending: bool,
}

/// What a list's rows depend on besides the data: its filter and its sort. Rows derived off
/// the UI thread carry the one they were made with, so a screen takes them only when it still
/// has it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowsKey {
    pub filter: Filter,
    pub sort: Sort,
}

#[derive(Debug, Default)]
pub struct ListState {
    pub rows: Vec<usize>,
    pub selected: usize,
    pub offset: usize,
    pub filter: Filter,
    pub sort: Sort,
    /// Rows visible at the last draw (drawing records it so paging and scrolling know it).
    viewport: Cell<usize>,
    /// A text pane: the selection is the first line shown, and scrolling stops with the last
    /// line at the bottom.
    pane: bool,
    /// The sort or the filter changed: the next [`ListState::set_rows`] goes to the top
    /// instead of keeping the selected item (rows above it would be hidden under the old
    /// scroll offset).
    resorted: bool,
}

impl ListState {
    pub fn with_sort(column: usize, descending: bool) -> Self {
        Self {
            sort: Sort { column, descending },
            ..Self::default()
        }
    }

    /// A text pane of `len` lines (Job detail, help): Up/Down/Page/Home/End scroll it, and the
    /// end is the last line at the bottom.
    pub fn text_pane(len: usize) -> Self {
        let mut l = Self {
            pane: true,
            ..Self::default()
        };
        l.set_rows((0..len).collect(), |_| false);
        l
    }

    /// The next sort column of `columns` (after the last, the first); the list goes to the top.
    pub fn sort_next(&mut self, columns: usize) {
        self.sort.column = (self.sort.column + 1) % columns.max(1);
        self.resorted = true;
    }

    /// The previous sort column of `columns` (before the first, the last); the list goes to
    /// the top.
    pub fn sort_prev(&mut self, columns: usize) {
        let n = columns.max(1);
        self.sort.column = (self.sort.column + n - 1) % n;
        self.resorted = true;
    }

    /// Sorted by `column`: a new column in its natural direction, the sorted one reversed
    /// (k9s's sort keys); the list goes to the top.
    pub fn sort_by(&mut self, column: usize) {
        if self.sort.column == column {
            self.sort.descending = !self.sort.descending;
        } else {
            self.sort = Sort {
                column,
                descending: false,
            };
        }
        self.resorted = true;
    }

    /// The sort reversed; the list goes to the top.
    pub fn sort_reverse(&mut self) {
        self.sort.descending = !self.sort.descending;
        self.resorted = true;
    }

    /// A new filter text (typed at the `/` prompt): the list starts at its first match, so no
    /// match is hidden above the scroll offset the unfiltered list had.
    pub fn set_filter(&mut self, text: String) {
        if self.filter.text != text {
            self.filter.text = text;
            self.resorted = true;
        }
    }

    /// Its filter and sort ([`RowsKey`]).
    pub fn rows_key(&self) -> RowsKey {
        RowsKey {
            filter: self.filter.clone(),
            sort: self.sort,
        }
    }

    pub fn selected_row(&self) -> Option<usize> {
        self.rows.get(self.selected).copied()
    }

    /// Replaces the rows, keeping the selection on the same item when it is still there.
    pub fn set_rows(&mut self, rows: Vec<usize>, same: impl Fn(usize) -> bool) {
        let keep = rows.iter().position(|&r| same(r));
        self.rows = rows;
        if std::mem::take(&mut self.resorted) {
            self.top();
            return;
        }
        self.selected = keep.unwrap_or(self.selected);
        self.clamp();
    }

    pub fn viewport(&self) -> usize {
        self.viewport.get().max(1)
    }

    /// Called by drawing: records the visible height and returns the rows to show, as
    /// (position in the list, row index), scrolled so the selection is visible.
    pub fn visible(&self, height: usize) -> (usize, &[usize]) {
        self.viewport.set(height);
        let offset = self.offset_for(height);
        let end = (offset + height).min(self.rows.len());
        (offset, &self.rows[offset.min(end)..end])
    }

    /// The first line a text pane shows: its selection, stopping with the last line at the
    /// bottom of `height` lines.
    pub fn pane_top(&self, height: usize) -> usize {
        self.selected
            .min(self.rows.len().saturating_sub(height.max(1)))
    }

    /// The largest selection: the last row, or for a text pane the top line that puts the last
    /// line at the bottom.
    fn last(&self) -> usize {
        if self.pane {
            self.rows.len().saturating_sub(self.viewport())
        } else {
            self.rows.len().saturating_sub(1)
        }
    }

    fn offset_for(&self, height: usize) -> usize {
        if self.pane {
            return self.pane_top(height);
        }
        let height = height.max(1);
        let mut offset = self.offset.min(self.rows.len().saturating_sub(1));
        if self.selected < offset {
            offset = self.selected;
        }
        if self.selected >= offset + height {
            offset = self.selected + 1 - height;
        }
        offset
    }

    pub fn move_by(&mut self, delta: isize) {
        if self.rows.is_empty() {
            return;
        }
        // From where the pane shows (a text pane's selection may be past its last top line).
        let from = self.selected.min(self.last());
        self.selected = from.saturating_add_signed(delta).min(self.last());
        self.offset = self.offset_for(self.viewport());
    }

    pub fn page(&mut self, down: bool) {
        let n = self.viewport().saturating_sub(1).max(1) as isize;
        self.move_by(if down { n } else { -n });
    }

    pub fn top(&mut self) {
        self.selected = 0;
        self.offset = 0;
    }

    pub fn bottom(&mut self) {
        self.selected = self.last();
        self.offset = self.offset_for(self.viewport());
    }

    fn clamp(&mut self) {
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
        self.offset = self.offset_for(self.viewport());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_is_case_insensitive_and_inverts() {
        let f = Filter { text: "RES".into() };
        assert!(f.matches(["research"]));
        assert!(!f.matches(["prod"]));
        let f = Filter {
            text: "!res".into(),
        };
        assert!(!f.matches(["research"]));
        assert!(f.matches(["prod"]));
        assert!(Filter::default().matches(["anything"]));
        assert!(!Filter { text: "!".into() }.is_active());
    }

    #[test]
    fn scrolling_keeps_the_selection_visible_and_only_yields_visible_rows() {
        let mut l = ListState::default();
        l.set_rows((0..100).collect(), |_| false);
        let (off, rows) = l.visible(10);
        assert_eq!((off, rows.len()), (0, 10));
        l.move_by(15);
        let (off, rows) = l.visible(10);
        assert_eq!((off, rows[0], rows.len()), (6, 6, 10));
        l.move_by(-3);
        assert_eq!(
            l.visible(10).0,
            6,
            "moving up inside the window does not scroll"
        );
        l.bottom();
        assert_eq!(l.visible(10).0, 90);
        l.page(false);
        assert_eq!(l.selected, 90);
        l.top();
        assert_eq!((l.selected, l.visible(10).0), (0, 0));
    }

    #[test]
    fn set_rows_keeps_the_same_item_selected() {
        let mut l = ListState::default();
        l.set_rows(vec![10, 20, 30], |_| false);
        l.move_by(2);
        assert_eq!(l.selected_row(), Some(30));
        l.set_rows(vec![30, 10], |r| r == 30);
        assert_eq!(l.selected_row(), Some(30));
        l.set_rows(vec![], |_| false);
        assert_eq!(l.selected_row(), None);
    }

    #[test]
    fn a_text_pane_stops_with_its_last_line_at_the_bottom() {
        let l = &mut ListState::text_pane(30);
        assert_eq!(l.visible(10).0, 0);
        l.bottom();
        assert_eq!(
            (l.selected, l.visible(10).0),
            (20, 20),
            "lines 20..30 shown"
        );
        l.move_by(5);
        assert_eq!(l.selected, 20, "no scrolling past the end");
        l.move_by(-1);
        assert_eq!(l.visible(10).0, 19, "one Up after End scrolls at once");
        l.page(true);
        assert_eq!(l.selected, 20);
        l.top();
        assert_eq!(l.visible(10).0, 0);
        let short = ListState::text_pane(3);
        assert_eq!(short.visible(10).0, 0);
    }

    #[test]
    fn a_new_sort_goes_to_the_top_instead_of_following_the_selection() {
        let mut l = ListState::default();
        l.set_rows((0..100).collect(), |_| false);
        l.visible(10);
        l.bottom();
        l.sort_next(3);
        l.set_rows((0..100).rev().collect(), |r| r == 99);
        assert_eq!((l.sort.column, l.selected, l.visible(10).0), (1, 0, 0));
        l.bottom();
        l.sort_reverse();
        l.set_rows((0..100).collect(), |r| r == 0);
        assert_eq!((l.sort.descending, l.selected), (true, 0));
        l.move_by(50);
        l.set_rows((0..100).collect(), |r| r == 50);
        assert_eq!(
            l.selected, 50,
            "a data refresh still keeps the selected item"
        );
    }

    #[test]
    fn a_column_is_picked_left_right_or_by_name_and_picked_again_it_flips() {
        let mut l = ListState::default();
        l.sort_prev(3);
        assert_eq!(l.sort.column, 2, "left of the first is the last");
        l.sort_prev(3);
        assert_eq!(l.sort.column, 1);
        l.sort_by(1);
        assert_eq!(
            (l.sort.column, l.sort.descending),
            (1, true),
            "again: flipped"
        );
        l.sort_by(0);
        assert_eq!(
            (l.sort.column, l.sort.descending),
            (0, false),
            "a new column starts in its natural direction"
        );
    }
}
