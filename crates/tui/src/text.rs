//! Text the console draws: untrusted strings made safe, and the few formats every screen shares.

use quotatop_model::Millis;
#[cfg(test)]
use std::borrow::Cow;

/// Untrusted text made safe to draw: [`quotatop_model::clean`], the one cleaner (control
/// characters shown as `�`, tabs and line breaks as spaces).
pub use quotatop_model::clean;

/// A duration as the largest two units: `45s`, `3m12s`, `2h05m`, `3d04h`; `-` when unknown
/// ([`quotatop_model::format_duration`], the one human duration format).
pub fn duration(ms: Option<Millis>) -> String {
    quotatop_model::format_duration(ms)
}

/// An instant as UTC `HH:MM:SS` (screens with room show [`date_time`]).
pub fn clock(ms: Option<Millis>) -> String {
    fmt_utc(ms, "%H:%M:%S")
}

/// An instant as UTC `YYYY-MM-DD HH:MM:SSZ`.
pub fn date_time(ms: Option<Millis>) -> String {
    fmt_utc(ms, "%Y-%m-%d %H:%M:%SZ")
}

fn fmt_utc(ms: Option<Millis>, fmt: &str) -> String {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map_or_else(|| "-".to_string(), |t| t.format(fmt).to_string())
}

/// Hours with one decimal, `-` when unknown.
pub fn hours(h: Option<f64>) -> String {
    h.map_or_else(|| "-".to_string(), |h| format!("{h:.1}"))
}

/// The last `n` characters of an id (job ids are long UUIDs; the tail tells them apart).
pub fn short_id(id: &str, n: usize) -> &str {
    let count = id.chars().count();
    if count <= n {
        return id;
    }
    let skip = count - n;
    id.char_indices().nth(skip).map_or(id, |(i, _)| &id[i..])
}

/// `s` in at most `width` terminal columns, cut in the middle so names sharing a prefix stay
/// distinct: `research-sweep-0024` in 16 → `research-sw…0024`. The tail kept is the last `-`,
/// `_` or `.` separated part when it takes at most half the room, else a third of it. Wide
/// characters count their columns. The one elision of names on every screen and dialog.
pub fn elide(s: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    if quotatop_model::display_width(s) <= width {
        return s.to_string();
    }
    if width <= 1 {
        return "…".chars().take(width).collect();
    }
    let w = |c: &char| c.width().unwrap_or(0);
    let chars: Vec<char> = s.chars().collect();
    let room = width - 1;
    let last_part = chars
        .iter()
        .rposition(|c| matches!(c, '-' | '_' | '.'))
        .map(|i| chars[i + 1..].iter().map(w).sum::<usize>());
    let tail_room = match last_part {
        Some(n) if n > 0 && n <= room / 2 => n,
        _ => room / 3,
    };
    let head_room = room - tail_room;
    let mut out = String::new();
    let mut used = 0;
    for c in &chars {
        if used + w(c) > head_room {
            break;
        }
        used += w(c);
        out.push(*c);
    }
    let mut tail = Vec::new();
    let mut used = 0;
    for c in chars.iter().rev() {
        if used + w(c) > tail_room {
            break;
        }
        used += w(c);
        tail.push(*c);
    }
    out.push('…');
    out.extend(tail.iter().rev());
    out
}

/// The first of `candidates` (longest first) that fits in `width` characters; the last one,
/// elided, when none does. Titles shorten by dropping parts, never by a cut mid-word.
pub fn first_fitting(candidates: &[String], width: usize) -> String {
    candidates
        .iter()
        .find(|c| c.chars().count() <= width)
        .cloned()
        .unwrap_or_else(|| elide(candidates.last().map_or("", String::as_str), width))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_shows_escape_sequences_as_replacement_characters_and_keeps_text() {
        assert_eq!(
            clean("job\x1b[31mred\x07\ttab\nline"),
            "job\u{fffd}[31mred\u{fffd} tab line"
        );
        assert!(matches!(clean("plain name"), Cow::Borrowed(_)));
        assert_eq!(clean("\u{9b}2Jx"), "\u{fffd}2Jx");
    }

    #[test]
    fn durations_use_two_units() {
        assert_eq!(duration(None), "-");
        assert_eq!(duration(Some(-5)), "0s");
        assert_eq!(duration(Some(45_000)), "45s");
        assert_eq!(duration(Some(192_000)), "3m12s");
        assert_eq!(duration(Some(7_500_000)), "2h05m");
        assert_eq!(duration(Some(3 * 86_400_000 + 4 * 3_600_000)), "3d04h");
    }

    #[test]
    fn times_are_utc() {
        assert_eq!(clock(Some(1_770_000_000_000)), "02:40:00");
        assert_eq!(date_time(Some(1_770_000_000_000)), "2026-02-02 02:40:00Z");
        assert_eq!(clock(None), "-");
    }

    #[test]
    fn elide_keeps_the_distinguishing_tail() {
        assert_eq!(elide("research-sweep-0024", 16), "research-sw…0024");
        assert_eq!(elide("research-sweep-0024", 19), "research-sweep-0024");
        assert_ne!(
            elide("research-sweep-0024", 12),
            elide("research-sweep-0025", 12)
        );
        // No short last part: a third of the room.
        assert_eq!(elide("abcdefghijklmnop", 10), "abcdef…nop");
        assert_eq!(elide("abc", 1), "…");
        assert_eq!(elide("abc", 0), "");
        assert_eq!(elide("naïve-sweep-0001", 10).chars().count(), 10);
    }

    #[test]
    fn first_fitting_drops_parts_instead_of_cutting_words() {
        let c = [
            "a long title · more".to_string(),
            "a long title".to_string(),
        ];
        assert_eq!(first_fitting(&c, 30), "a long title · more");
        assert_eq!(first_fitting(&c, 14), "a long title");
        assert_eq!(first_fitting(&c, 5).chars().count(), 5);
    }

    #[test]
    fn short_id_keeps_the_tail() {
        assert_eq!(short_id("abcdef", 4), "cdef");
        assert_eq!(short_id("ab", 4), "ab");
    }
}
