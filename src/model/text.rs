/// Untrusted text (names, reasons, justifications, tags) made safe to print on a terminal:
/// control characters (escape sequences included) become `�`, except that tabs and newlines
/// become spaces.
pub fn clean_text(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => ' ',
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_cannot_reach_the_terminal() {
        assert_eq!(
            clean_text("ok\u{1b}[2Jgone\u{7}"),
            "ok\u{fffd}[2Jgone\u{fffd}"
        );
        assert_eq!(clean_text("a\tb\nc"), "a b c");
        assert_eq!(clean_text("\u{9b}31m"), "\u{fffd}31m");
        assert_eq!(clean_text("plain – ünïcode"), "plain – ünïcode");
    }
}
