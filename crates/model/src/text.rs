use unicode_width::UnicodeWidthStr;

/// The terminal columns `s` takes: two for a wide character (CJK, most emoji), none for a
/// combining mark. `chars().count()` is not it: padding by it misaligns every column after a
/// wide name.
pub fn display_width(s: &str) -> usize {
    s.width()
}

/// `s` left-aligned in a column `width` terminal columns wide ([`display_width`]); text wider
/// than the column is kept whole.
pub fn pad_right(s: &str, width: usize) -> String {
    let pad = width.saturating_sub(display_width(s));
    let mut out = String::with_capacity(s.len() + pad);
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', pad));
    out
}

/// Whether `c` must not reach a terminal, a file or a label as it is: a control character (C0,
/// DEL, C1: ESC, BEL, CR, U+009B…) or a bidirectional formatting character (U+202A–U+202E,
/// U+2066–U+2069, U+200E, U+200F, U+061C), which reorders what is drawn after it so that a
/// name can show as another ("Trojan Source"). The one definition every cleaner uses.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// Untrusted text (names, reasons, justifications, tags) made safe to print on a terminal:
/// control and bidirectional formatting characters ([`is_unsafe_char`]; escape sequences
/// included) become `�`, so the reader sees that something was there, except that tabs and
/// line breaks become spaces. The one cleaner, for the console's screens and the commands'
/// output alike; borrows when nothing needs changing.
pub fn clean(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars()
            .map(|c| match c {
                '\t' | '\n' | '\r' => ' ',
                c if is_unsafe_char(c) => '\u{fffd}',
                c => c,
            })
            .collect(),
    )
}

/// [`clean`] as an owned `String`.
pub fn clean_text(s: &str) -> String {
    clean(s).into_owned()
}

/// Serialized JSON made safe to print: serde_json escapes the C0 controls but writes the C1
/// controls (U+0080..U+009F, e.g. U+009B, an 8-bit CSI some terminals obey) and DEL raw; this escapes
/// them as `\u00XX`. Outside strings JSON is ASCII, so only string contents change, and the
/// parsed value is the same.
pub fn escape_c1_in_json(json: String) -> String {
    let raw = |c: char| c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c);
    if !json.chars().any(raw) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if raw(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Untrusted text kept whole but made safe to print: every control character (C0, DEL, C1:
/// ESC, BEL, CR, LF, U+009B…) written as a visible `\u00XX`. For exports, where the text should
/// stay readable and lose nothing; [`clean_text`] is for screens.
pub fn escape_controls(s: &str) -> String {
    if !s.chars().any(is_unsafe_char) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A URL without its userinfo (`scheme://user:password@host` → `scheme://host`), so an endpoint
/// given with credentials in it is never stored (journal, audit log) or printed with them.
pub fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// One CSV field: quoted (with inner quotes doubled) when it holds a comma, a quote or a line
/// break; as is otherwise. A field a spreadsheet would run as a formula (one beginning with
/// `=`, `+`, `-`, `@`, a tab or a carriage return, as OWASP's "CSV injection" lists them) is
/// written with a leading `'`, which makes it text; a number (`-12.5`) and a lone `-` stay as
/// they are.
pub fn csv_field(s: &str) -> String {
    let formula =
        s.starts_with(['=', '+', '-', '@', '\t', '\r']) && s.len() > 1 && s.parse::<f64>().is_err();
    let s = if formula {
        std::borrow::Cow::Owned(format!("'{s}"))
    } else {
        std::borrow::Cow::Borrowed(s)
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_counts_terminal_columns() {
        assert_eq!(display_width("research"), 8);
        assert_eq!(display_width("研究チーム"), 10);
        assert_eq!(display_width("🚀ml"), 4);
        assert_eq!(pad_right("研究", 6), "研究  ");
        assert_eq!(pad_right("🚀", 4), "🚀  ");
        assert_eq!(pad_right("toolong", 3), "toolong");
        for name in ["research", "研究チーム", "🚀ml", "é"] {
            assert_eq!(display_width(&pad_right(name, 12)), 12, "{name}");
        }
    }

    #[test]
    fn bidirectional_formatting_is_cleaned_like_a_control() {
        let name = "evil\u{202e}txt.exe\u{202c}\u{2066}x\u{2069}\u{200f}";
        assert_eq!(
            clean_text(name),
            "evil\u{fffd}txt.exe\u{fffd}\u{fffd}x\u{fffd}\u{fffd}"
        );
        assert_eq!(
            escape_controls("a\u{202e}b"),
            "a\\u202eb",
            "exports keep it visible"
        );
        // Joiners in emoji and ordinary right-to-left text stay.
        assert_eq!(clean_text("👩\u{200d}💻 مرحبا"), "👩\u{200d}💻 مرحبا");
    }

    #[test]
    fn c1_controls_are_escaped_in_json() {
        let v = serde_json::json!({"name": "a\u{9b}31m\u{1b}b\u{7f}", "n": 1});
        let out = escape_c1_in_json(serde_json::to_string(&v).unwrap());
        assert!(!out.chars().any(char::is_control), "{out}");
        assert!(out.contains("\\u009b"), "{out}");
        let back: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back, v);
        assert_eq!(escape_c1_in_json("{\"a\":\"ü\"}".into()), "{\"a\":\"ü\"}");
    }

    #[test]
    fn userinfo_is_dropped_from_urls() {
        assert_eq!(
            without_userinfo("http://AKID:s3cr@t@127.0.0.1:5566/x?a=b@c"),
            "http://127.0.0.1:5566/x?a=b@c"
        );
        assert_eq!(
            without_userinfo("https://batch.us-east-1.amazonaws.com"),
            "https://batch.us-east-1.amazonaws.com"
        );
        assert_eq!(without_userinfo("http://h/p@q"), "http://h/p@q");
        assert_eq!(without_userinfo("not a url"), "not a url");
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        // Formulas become text; numbers and a lone dash do not change.
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("+cmd|' /C calc'!A0"), "'+cmd|' /C calc'!A0");
        assert_eq!(csv_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_field("-2+3"), "'-2+3");
        assert_eq!(csv_field("-12.5"), "-12.5");
        assert_eq!(csv_field("+3"), "+3");
        assert_eq!(csv_field("-"), "-");
    }

    #[test]
    fn controls_are_escaped_visibly() {
        assert_eq!(
            escape_controls("a\u{1b}[2J\u{7}\r\u{9b}31m\u{7f}z"),
            "a\\u001b[2J\\u0007\\u000d\\u009b31m\\u007fz"
        );
        assert_eq!(escape_controls("plain – ü"), "plain – ü");
    }

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
