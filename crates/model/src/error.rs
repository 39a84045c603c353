//! Errors as one line of text: the message, then each cause after `: `.

/// `e`'s message followed by each of its causes (`source()`), joined by `: ` — what anyhow's
/// `{:#}` prints. For where an error becomes text outside `main` (a status line, a warning):
/// quotatop's error types never repeat their source in their own message, so `to_string()`
/// alone would drop the cause.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
