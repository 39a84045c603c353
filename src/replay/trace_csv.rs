//! quotatop's own trace format: CSV with a header, one job per line.
//!
//! | column | meaning |
//! |---|---|
//! | `submit_s` | submission time, seconds from the trace start (decimals allowed) |
//! | `share` | quota share name |
//! | `instance_type` | e.g. `ml.p4d.24xlarge` |
//! | `instance_count` | instances the job needs (≥ 1) |
//! | `work_s` | running time needed to finish, seconds |
//! | `priority` | optional, 0–9999 (default 0) |
//! | `checkpoint_s` | optional checkpoint interval, seconds (empty: none) |
//! | `retries` | optional `preemptionRetriesBeforeTermination` (empty: unbounded) |
//! | `name` | optional job name (default `<share>-<line>`) |
//! | `deadline_s` | optional: the job must succeed within this many seconds of submission |
//!
//! Columns may come in any order; unknown columns are an error (a typo should not pass).

use super::{ReplayError, TraceJob};

const COLUMNS: [&str; 10] = [
    "submit_s",
    "share",
    "instance_type",
    "instance_count",
    "work_s",
    "priority",
    "checkpoint_s",
    "retries",
    "name",
    "deadline_s",
];
const REQUIRED: [&str; 5] = [
    "submit_s",
    "share",
    "instance_type",
    "instance_count",
    "work_s",
];

pub fn parse(text: &str, origin: &str) -> Result<Vec<TraceJob>, ReplayError> {
    let err = |line: usize, message: String| ReplayError::Trace {
        origin: format!("{origin}:{line}"),
        message,
    };
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = lines
        .next()
        .map(|(_, h)| h.split(',').map(str::trim).collect())
        .ok_or_else(|| err(1, "empty file: a header line is needed".to_string()))?;
    for h in &header {
        if !COLUMNS.contains(h) {
            return Err(err(
                1,
                format!("unknown column {h:?} (known: {})", COLUMNS.join(", ")),
            ));
        }
    }
    for r in REQUIRED {
        if !header.contains(&r) {
            return Err(err(1, format!("missing column {r}")));
        }
    }
    let col = |name: &str| header.iter().position(|h| *h == name);
    let mut jobs = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != header.len() {
            return Err(err(
                n,
                format!("{} fields, the header has {}", fields.len(), header.len()),
            ));
        }
        let get = |name: &str| col(name).map(|c| fields[c]).filter(|v| !v.is_empty());
        let need = |name: &str| get(name).ok_or_else(|| err(n, format!("{name} is empty")));
        let num = |name: &str, v: &str| -> Result<f64, ReplayError> {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| err(n, format!("{name} {v:?} is not a number >= 0")))
        };
        let whole = |name: &str, v: &str| -> Result<u64, ReplayError> {
            v.parse::<u64>()
                .map_err(|_| err(n, format!("{name} {v:?} is not a whole number >= 0")))
        };
        let share = need("share")?.to_string();
        let count = whole("instance_count", need("instance_count")?)?;
        if count == 0 || count > u32::MAX as u64 {
            return Err(err(n, "instance_count must be at least 1".to_string()));
        }
        let priority = match get("priority") {
            Some(p) => {
                let p = whole("priority", p)?;
                if p > crate::model::MAX_PRIORITY as u64 {
                    return Err(err(n, format!("priority {p} is above 9999")));
                }
                p as i64
            }
            None => 0,
        };
        jobs.push(TraceJob {
            name: get("name")
                .map(str::to_string)
                .unwrap_or_else(|| format!("{share}-{n}")),
            origin: format!("{origin}:{n}"),
            submit_ms: (num("submit_s", need("submit_s")?)? * 1000.0).round() as i64,
            instance_type: need("instance_type")?.to_string(),
            instance_count: count as u32,
            work_ms: (num("work_s", need("work_s")?)? * 1000.0).round() as u64,
            priority,
            checkpoint_interval_ms: get("checkpoint_s")
                .map(|c| num("checkpoint_s", c).map(|x| (x * 1000.0).round() as u64))
                .transpose()?
                .filter(|&c| c > 0),
            preemption_retries: get("retries")
                .map(|r| whole("retries", r).map(|x| x.min(u32::MAX as u64) as u32))
                .transpose()?,
            deadline_s: get("deadline_s")
                .map(|d| whole("deadline_s", d))
                .transpose()?,
            share,
        });
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_required_and_optional_columns() {
        let t = "share,submit_s,instance_type,instance_count,work_s,priority,checkpoint_s,retries\n\
                 a,0,ml.p4d.24xlarge,2,3600,5,600,\n\
                 # a comment\n\
                 b,1.5,ml.p4d.24xlarge,1,60,,,3\n";
        let jobs = parse(t, "t.csv").unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].checkpoint_interval_ms, Some(600_000));
        assert_eq!(jobs[0].preemption_retries, None);
        assert_eq!(jobs[0].priority, 5);
        assert_eq!(jobs[1].submit_ms, 1_500);
        assert_eq!(jobs[1].preemption_retries, Some(3));
        assert_eq!(jobs[1].name, "b-4");
        assert_eq!(jobs[1].origin, "t.csv:4");
    }

    #[test]
    fn bad_input_names_the_line() {
        let h = "submit_s,share,instance_type,instance_count,work_s\n";
        let cases = [
            (
                format!("{h}0,a,ml.m5.large,x,10\n"),
                "t.csv:2: instance_count \"x\" is not a whole number >= 0",
            ),
            (
                format!("{h}0,a,ml.m5.large,0,10\n"),
                "t.csv:2: instance_count must be at least 1",
            ),
            (
                format!("{h}0,a,ml.m5.large,1\n"),
                "t.csv:2: 4 fields, the header has 5",
            ),
            (
                format!("{h}-1,a,ml.m5.large,1,10\n"),
                "t.csv:2: submit_s \"-1\" is not a number >= 0",
            ),
            (
                format!("{h}0,,ml.m5.large,1,10\n"),
                "t.csv:2: share is empty",
            ),
            (
                "submit_s,share\n".to_string(),
                "t.csv:1: missing column instance_type",
            ),
            (
                "submit_s,shaer\n".to_string(),
                "t.csv:1: unknown column \"shaer\"",
            ),
            (
                String::new(),
                "t.csv:1: empty file: a header line is needed",
            ),
        ];
        for (text, want) in cases {
            let e = parse(&text, "t.csv").unwrap_err().to_string();
            assert!(e.starts_with(want), "{e} vs {want}");
        }
    }
}
