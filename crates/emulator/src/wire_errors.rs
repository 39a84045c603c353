//! Request-body type errors in AWS's style: the member's wire name and what it must be, never
//! the JSON parser's own wording.

/// AWS's style for a member of the wrong type: the member's wire name and what it must be, not
/// the parser's wording (`invalid type: string "x", expected i64`).
pub fn invalid_member(path: &str, parser: &str) -> String {
    let member = if path.is_empty() || path == "." {
        "it".to_string()
    } else {
        path.to_string()
    };
    let split = parser
        .strip_prefix("invalid type: ")
        .or_else(|| parser.strip_prefix("invalid value: "))
        .and_then(|rest| rest.split_once(", expected "));
    match split {
        Some((got, expected)) => format!(
            "Invalid request body: {member} must be {}, got {}",
            words_for_expected(expected),
            words_for_got(got)
        ),
        None => format!("Invalid request body: {member} is not valid"),
    }
}

fn words_for_expected(expected: &str) -> &'static str {
    let e = expected.trim();
    let int = |t: &str| {
        t.len() > 1
            && (t.starts_with('i') || t.starts_with('u'))
            && t[1..].bytes().all(|b| b.is_ascii_digit())
    };
    if e.starts_with('u') && int(e) {
        "a whole number in range"
    } else if int(e) {
        "an integer in range"
    } else if e == "f32" || e == "f64" {
        "a number"
    } else if e.contains("string") {
        "a string"
    } else if e.contains("boolean") {
        "a boolean"
    } else if e.contains("sequence") {
        "a list"
    } else if e.contains("map") || e.starts_with("struct") {
        "an object"
    } else {
        "a valid value"
    }
}

fn words_for_got(got: &str) -> String {
    let kind = got.split_whitespace().next().unwrap_or("");
    match kind {
        "string" => "a string".to_string(),
        "integer" => match got.split('`').nth(1) {
            Some(n) if n.len() <= 20 => n.to_string(),
            _ => "an integer".to_string(),
        },
        "floating" => "a number with a fraction".to_string(),
        "boolean" => "a boolean".to_string(),
        "map" => "an object".to_string(),
        "sequence" => "a list".to_string(),
        "null" | "unit" => "null".to_string(),
        _ => "a value of another type".to_string(),
    }
}
