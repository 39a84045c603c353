//! How far a preview can be trusted, by where the data comes from: the emulator runs the same
//! engine as the preview, so there it is exact (but for ties the snapshot cannot settle, which
//! the preview says itself); against AWS it is quotatop's model of choices AWS does not publish.

/// What the preview says against AWS (any endpoint that is not the loopback emulator).
pub const AWS_MODEL_NOTE: &str = "as modelled: against AWS this is quotatop's engine; AWS does not publish every choice it makes (which jobs are preempted, ties, pass order)";

/// Whether an endpoint is the emulator: the emulator binds 127.0.0.1 only, so a loopback
/// endpoint is it; no endpoint (the regional one) or any other host is AWS.
pub fn is_emulator(endpoint: Option<&str>) -> bool {
    let Some(url) = endpoint else {
        return false;
    };
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The note to show with a preview made on data from `endpoint`: `None` on the emulator.
pub fn model_note(endpoint: Option<&str>) -> Option<&'static str> {
    (!is_emulator(endpoint)).then_some(AWS_MODEL_NOTE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_the_emulator_and_everything_else_is_aws() {
        for e in [
            "http://127.0.0.1:4566",
            "http://localhost:8080/",
            "http://[::1]:9000",
        ] {
            assert!(is_emulator(Some(e)), "{e}");
            assert_eq!(model_note(Some(e)), None);
        }
        for e in [
            None,
            Some("https://batch.us-east-1.amazonaws.com"),
            Some("https://vpce-123.batch.eu-west-1.vpce.amazonaws.com"),
            Some("http://127.example.com"),
        ] {
            assert!(!is_emulator(e), "{e:?}");
            assert_eq!(model_note(e), Some(AWS_MODEL_NOTE));
        }
    }
}
