//! The one column layout every table uses: [`Col`]umns sized to a row's width, dropped by
//! priority when short, grown by weight when there is room.

use super::MARKER;

/// What goes last and what goes first when a row is short, for every table: the one place the
/// order is defined (a screen's other columns sit between, by their own `drop`).
pub mod drop_order {
    /// Never dropped: names, statuses, and what a decision rests on (the LOOP, LIMIT and
    /// MISCONFIG flags; on the status line, READ-ONLY; the key hints and the attention
    /// panel's causes are kept likewise).
    pub const KEPT: u8 = 0;
    /// A share's strategy (`L&B 200%`): read once, on the Share screen too; goes early.
    pub const STRATEGY: u8 = 8;
    /// History (sparklines, when it last happened): goes first.
    pub const HISTORY: u8 = 9;
}

/// One column of a table, as [`layout`] sizes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Col {
    /// The least it is shown at (its header, its widest figure).
    pub min: u16,
    /// What its content needs whole (the longest name, `trn1.32xlarge`); spare room gives
    /// every column this, the columns never dropped first, before anything grows.
    pub want: u16,
    /// Its part of the room left once every column has its `want` (bars, sparklines); 0: none.
    pub grow: u16,
    /// 0: never dropped; else the order it goes in when the row is short, highest first.
    pub drop: u8,
}

impl Col {
    /// A column always `w` wide (a figure, a status).
    pub const fn fixed(w: u16, drop: u8) -> Self {
        Self {
            min: w,
            want: w,
            grow: 0,
            drop,
        }
    }

    /// Text as long as `longest`, shown at least `min` wide (cut in the middle below that).
    pub fn text(min: u16, longest: usize, drop: u8) -> Self {
        let want = u16::try_from(longest).unwrap_or(u16::MAX).max(min);
        Self {
            min: min.min(want),
            want,
            grow: 0,
            drop,
        }
    }

    /// A graphic (a bar, a sparkline): at least `min`, then `grow` parts of what is left.
    pub const fn graphic(min: u16, grow: u16, drop: u8) -> Self {
        Self {
            min,
            want: min,
            grow,
            drop,
        }
    }
}

/// The one column layout every table uses: the widths of `cols` in a row of `width` columns
/// (a table pane's whole width: borders and the selection marker are taken off, and one space
/// between the columns shown). What does not fit at its `min` is dropped (width 0), highest
/// `drop` first, never a column of `drop` 0 (a name whose `min` is its whole length stays whole
/// while anything else can go); one dropped early comes back if it fits once a wider one went.
/// Then every column gets its `want` (the never-dropped first: names before anything grows),
/// and only then do the growing columns (bars, sparklines) share the rest. Only when the
/// columns never dropped do not fit at all are the widest cut.
pub fn layout(cols: &[Col], width: u16) -> Vec<u16> {
    layout_in(
        cols,
        width.saturating_sub(2 + MARKER.chars().count() as u16),
    )
}

/// [`layout`] in `room` columns exactly (a table drawn without borders or marker).
pub fn layout_in(cols: &[Col], room: u16) -> Vec<u16> {
    let mut widths = drop_to_fit(cols, cols.iter().map(|c| c.min).collect(), room);
    while used(&widths) > room {
        match (0..cols.len())
            .filter(|&i| widths[i] > 1)
            .max_by_key(|&i| widths[i])
        {
            Some(i) => widths[i] -= 1,
            None => break,
        }
    }
    grow(cols, &mut widths, room);
    widths
}

/// The room `widths` take, one space between the columns shown.
fn used(widths: &[u16]) -> u16 {
    let n = widths.iter().filter(|w| **w > 0).count() as u16;
    widths.iter().sum::<u16>() + n.saturating_sub(1)
}

/// `widths` with columns dropped, highest `drop` first, until they fit `room` (or only
/// columns never dropped are left); then those dropped that fit again come back.
fn drop_to_fit(cols: &[Col], mut widths: Vec<u16>, room: u16) -> Vec<u16> {
    while used(&widths) > room {
        let droppable = (0..cols.len())
            .filter(|&i| widths[i] > 0 && cols[i].drop > 0)
            .max_by_key(|&i| (cols[i].drop, i));
        match droppable {
            Some(i) => widths[i] = 0,
            None => break,
        }
    }
    let mut dropped: Vec<usize> = (0..cols.len()).filter(|&i| widths[i] == 0).collect();
    dropped.sort_by_key(|&i| cols[i].drop);
    for i in dropped {
        if cols[i].min > 0 && used(&widths) + cols[i].min < room {
            widths[i] = cols[i].min;
        }
    }
    widths
}

/// The spare room of `widths`: every column to its `want` (never dropped first), then the
/// growing ones by weight.
fn grow(cols: &[Col], widths: &mut [u16], room: u16) {
    let mut spare = room.saturating_sub(used(widths));
    let mut order: Vec<usize> = (0..cols.len()).filter(|&i| widths[i] > 0).collect();
    order.sort_by_key(|&i| cols[i].drop);
    for &i in &order {
        let more = cols[i].want.saturating_sub(widths[i]).min(spare);
        widths[i] += more;
        spare -= more;
    }
    let weights: u16 = order.iter().map(|&i| cols[i].grow).sum();
    if weights == 0 {
        return;
    }
    let share = spare;
    for &i in &order {
        let more = (u32::from(share) * u32::from(cols[i].grow) / u32::from(weights)) as u16;
        widths[i] += more;
        spare -= more;
    }
    // The remainder to the first growing columns, a cell each.
    for &i in order
        .iter()
        .filter(|&&i| cols[i].grow > 0)
        .cycle()
        .take(spare.into())
    {
        widths[i] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(min: u16, want: u16, grow: u16, drop: u8) -> Col {
        Col {
            min,
            want,
            grow,
            drop,
        }
    }

    /// A row of 40 columns leaves 36 inside the borders and the marker.
    #[test]
    fn names_are_whole_before_bars_grow() {
        let cols = [col(8, 30, 0, 0), col(6, 6, 3, 0), col(4, 4, 0, 1)];
        // 30 + 6 + 4 + 2 spaces = 42 > 36: nothing drops (the fixed column fits at its min),
        // the name gets what is left after the others' minimum.
        assert_eq!(layout(&cols, 40), vec![24, 6, 4]);
        // Room for all: the name whole first, then the bar grows.
        assert_eq!(layout(&cols, 60), vec![30, 20, 4]);
    }

    #[test]
    fn what_does_not_fit_is_dropped_by_priority() {
        let cols = [
            col(10, 10, 0, 0),
            col(5, 5, 0, 2),
            col(5, 5, 0, 1),
            col(5, 5, 0, 3),
        ];
        // 36 inside: everything (10+5+5+5+3 = 28).
        assert_eq!(layout(&cols, 40), vec![10, 5, 5, 5]);
        // 20 inside: drop 3 goes, then drop 2 (10+5+1 = 16).
        assert_eq!(layout(&cols, 24), vec![10, 0, 5, 0]);
        // 10 inside: only the column never dropped is left.
        assert_eq!(layout(&cols, 14), vec![10, 0, 0, 0]);
        // Less than that: it gives way rather than overflow.
        assert_eq!(layout(&cols, 10), vec![6, 0, 0, 0]);
        // A name whole when dropping the optional columns makes room for it.
        let cols = [col(20, 20, 0, 0), col(6, 6, 0, 1), col(6, 6, 0, 2)];
        assert_eq!(layout(&cols, 32), vec![20, 6, 0]);
        // A name that may be cut (min below its length) leaves them and takes what is left.
        let cols = [col(8, 20, 0, 0), col(6, 6, 0, 1), col(6, 6, 0, 2)];
        assert_eq!(layout(&cols, 32), vec![14, 6, 6]);
        // A narrow column dropped before a wide one comes back when the wide one went.
        let cols = [
            col(10, 10, 0, 0),
            col(3, 3, 0, 1),
            col(8, 8, 0, 2),
            col(2, 2, 0, 3),
        ];
        assert_eq!(layout(&cols, 24), vec![10, 3, 0, 2]);
    }

    #[test]
    fn growing_columns_share_the_rest_by_weight() {
        let cols = [col(4, 4, 0, 0), col(2, 2, 1, 0), col(2, 2, 3, 0)];
        // 96 inside: 4 + 2 + 2 + 2 spaces = 10; 86 left, a quarter and three quarters.
        let w = layout(&cols, 100);
        assert_eq!(w.iter().sum::<u16>() + 2, 96);
        assert_eq!(w, vec![4, 2 + 21 + 1, 2 + 64]);
    }
}
