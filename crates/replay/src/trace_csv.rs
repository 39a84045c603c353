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
//! | `priority_changes` | optional: later priority changes, `seconds:priority;…` (seconds from the trace start, as `submit_s`), replayed at those times |
//!
//! Columns may come in any order; unknown columns are an error (a typo should not pass). Fields
//! follow RFC 4180: a name holding a comma is quoted (`"a,b"`). Times are at most 100 years.

use super::{JobExtras, JobName, Origin, ReplayError, TraceJob};
use quotatop_model::{Millis, seconds_to_millis};

/// The columns a trace may have, in the order `from_history::write_csv` writes them.
pub const COLUMNS: [&str; 11] = [
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
    "priority_changes",
];
const REQUIRED: [&str; 5] = [
    "submit_s",
    "share",
    "instance_type",
    "instance_count",
    "work_s",
];

/// `text` with its comment lines (`#` first, outside a quoted field) turned into spaces, so
/// byte offsets, and so line numbers, stay those of the file.
fn blank_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_quotes = false;
    for line in text.split_inclusive('\n') {
        if !in_quotes && line.trim_start().starts_with('#') {
            let body = line.trim_end_matches(['\r', '\n']);
            out.extend(std::iter::repeat_n(' ', body.len()));
            out.push_str(&line[body.len()..]);
            continue;
        }
        // RFC 4180 escapes a quote as "", so the parity of quotes tells whether a field is open.
        if line.matches('"').count() % 2 == 1 {
            in_quotes = !in_quotes;
        }
        out.push_str(line);
    }
    out
}

/// Parses quotatop's trace CSV (RFC 4180: a quoted field may hold commas). Errors name the
/// file, the line and the column.
pub fn parse(text: &str, origin: &str) -> Result<Vec<TraceJob>, ReplayError> {
    let err = |line: u64, message: String| ReplayError::Trace {
        origin: format!("{origin}:{line}"),
        message,
    };
    let line_at = super::line_index(text);
    let csv_err = |e: csv::Error| {
        let line = e.position().map_or(1, |p| line_at(p.byte()));
        err(line, format!("not valid CSV: {e}"))
    };
    let text = blank_comments(text);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut records = reader.records();
    let header: Vec<String> = match records.next() {
        Some(r) => r.map_err(csv_err)?.iter().map(str::to_string).collect(),
        None => return Err(err(1, "empty file: a header line is needed".to_string())),
    };
    for h in &header {
        if !COLUMNS.contains(&h.as_str()) {
            return Err(err(
                1,
                format!("unknown column {h:?} (known: {})", COLUMNS.join(", ")),
            ));
        }
    }
    for r in REQUIRED {
        if !header.iter().any(|h| h == r) {
            return Err(err(1, format!("missing column {r}")));
        }
    }
    let file: std::sync::Arc<str> = origin.into();
    let mut names = Vec::new();
    let mut jobs = Vec::new();
    for record in records {
        let record = record.map_err(csv_err)?;
        let n = record.position().map_or(0, |p| line_at(p.byte()));
        if record.iter().all(str::is_empty) {
            continue;
        }
        if record.len() != header.len() {
            return Err(err(
                n,
                format!("{} fields, the header has {}", record.len(), header.len()),
            ));
        }
        let row = Row {
            origin,
            header: &header,
            record: &record,
            n,
        };
        jobs.push(row.job(&mut names, &file)?);
    }
    Ok(jobs)
}

/// One record of the trace, read field by field; errors name the file, the line and the column.
struct Row<'a> {
    origin: &'a str,
    header: &'a [String],
    record: &'a csv::StringRecord,
    /// The line it starts on.
    n: u64,
}

impl Row<'_> {
    fn err(&self, message: String) -> ReplayError {
        ReplayError::Trace {
            origin: format!("{}:{}", self.origin, self.n),
            message,
        }
    }

    fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// "submit_s (column 1)": the field name and its 1-based position.
    fn at(&self, name: &str) -> String {
        match self.col(name) {
            Some(c) => format!("{name} (column {})", c + 1),
            None => name.to_string(),
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.col(name)
            .and_then(|c| self.record.get(c))
            .filter(|v| !v.is_empty())
    }

    fn need(&self, name: &str) -> Result<&str, ReplayError> {
        self.get(name)
            .ok_or_else(|| self.err(format!("{} is empty", self.at(name))))
    }

    fn secs(&self, name: &str, v: &str) -> Result<Millis, ReplayError> {
        seconds_to_millis(v).map_err(|m| self.err(format!("{}: {m}", self.at(name))))
    }

    fn whole(&self, name: &str, v: &str, max: u64) -> Result<u64, ReplayError> {
        match v.parse::<u64>() {
            Ok(x) if x <= max => Ok(x),
            Ok(_) => Err(self.err(format!("{}: {v:?} is above {max}", self.at(name)))),
            Err(_) => Err(self.err(format!(
                "{}: {v:?} is not a whole number >= 0",
                self.at(name)
            ))),
        }
    }

    /// `priority_changes`: `seconds:priority` pairs separated by `;`.
    fn priority_changes(&self) -> Result<Vec<(Millis, i64)>, ReplayError> {
        let mut priority_changes = Vec::new();
        for part in self
            .get("priority_changes")
            .unwrap_or_default()
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let bad = || {
                self.err(format!(
                    "{}: {part:?} is not seconds:priority",
                    self.at("priority_changes")
                ))
            };
            let (t, p) = part.split_once(':').ok_or_else(bad)?;
            let t = self.secs("priority_changes", t.trim())?;
            let p = self.whole(
                "priority_changes",
                p.trim(),
                quotatop_model::MAX_PRIORITY as u64,
            )?;
            priority_changes.push((t, p as i64));
        }
        Ok(priority_changes)
    }

    /// The job of this record, its fields checked in a fixed order whatever the columns' (the
    /// first problem found is the one reported).
    fn job(
        &self,
        names: &mut Vec<std::sync::Arc<str>>,
        file: &std::sync::Arc<str>,
    ) -> Result<TraceJob, ReplayError> {
        let n = self.n;
        let share = super::interned(names, self.need("share")?);
        let count = self.whole(
            "instance_count",
            self.need("instance_count")?,
            u64::from(u32::MAX),
        )?;
        if count == 0 {
            return Err(self.err(format!("{}: must be at least 1", self.at("instance_count"))));
        }
        let priority = match self.get("priority") {
            Some(p) => self.whole("priority", p, quotatop_model::MAX_PRIORITY as u64)? as i64,
            None => 0,
        };
        let checkpoint = self
            .get("checkpoint_s")
            .map(|c| self.secs("checkpoint_s", c))
            .transpose()?
            .filter(|&c| c > 0);
        let retries = self
            .get("retries")
            .map(|r| self.whole("retries", r, u64::from(u32::MAX)))
            .transpose()?;
        let priority_changes = self.priority_changes()?;
        let deadline_ms = self
            .get("deadline_s")
            .map(|d| self.secs("deadline_s", d))
            .transpose()?
            .map(|ms| ms as u64);
        Ok(TraceJob {
            extras: JobExtras::new(deadline_ms, priority_changes),
            name: self
                .get("name")
                .map_or_else(|| JobName::numbered(&share, &n.to_string()), JobName::from),
            origin: Origin::at(file, n),
            submit_ms: self.secs("submit_s", self.need("submit_s")?)?,
            instance_type: super::interned(names, self.need("instance_type")?),
            instance_count: count as u32,
            work_ms: self.secs("work_s", self.need("work_s")?)? as u64,
            priority,
            checkpoint_interval_ms: checkpoint.map(|c| c as u64),
            preemption_retries: retries.map(|r| r as u32),
            share,
        })
    }
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
        assert!(jobs[0].extras.priority_changes().is_empty());
    }

    #[test]
    fn priority_changes_are_read_in_time_order() {
        let t = "submit_s,share,instance_type,instance_count,work_s,priority_changes\n\
                 0,a,ml.m5.large,1,10,90:7; 30.5:3\n";
        let jobs = parse(t, "t.csv").unwrap();
        assert_eq!(
            jobs[0].extras.priority_changes(),
            [(30_500, 3), (90_000, 7)]
        );
        let bad = t.replace("90:7", "90=7");
        let e = parse(&bad, "t.csv").unwrap_err().to_string();
        assert!(
            e.starts_with("t.csv:2: priority_changes (column 6): \"90=7\" is not"),
            "{e}"
        );
    }

    #[test]
    fn bad_input_names_the_line() {
        let h = "submit_s,share,instance_type,instance_count,work_s\n";
        let cases = [
            (
                format!("{h}0,a,ml.m5.large,x,10\n"),
                "t.csv:2: instance_count (column 4): \"x\" is not a whole number >= 0",
            ),
            (
                format!("{h}0,a,ml.m5.large,0,10\n"),
                "t.csv:2: instance_count (column 4): must be at least 1",
            ),
            (
                format!("{h}0,a,ml.m5.large,1\n"),
                "t.csv:2: 4 fields, the header has 5",
            ),
            (
                format!("{h}-1,a,ml.m5.large,1,10\n"),
                "t.csv:2: submit_s (column 1): \"-1\" is negative",
            ),
            (
                format!("{h}1e300,a,ml.m5.large,1,10\n"),
                "t.csv:2: submit_s (column 1): \"1e300\" is beyond 100 years",
            ),
            (
                format!("{h}0,a,ml.m5.large,1,NaN\n"),
                "t.csv:2: work_s (column 5): \"NaN\" is not a finite number",
            ),
            (
                format!("{h}0,a,ml.m5.large,1,inf\n"),
                "t.csv:2: work_s (column 5): \"inf\" is not a finite number",
            ),
            (
                format!("{h}0,a,ml.m5.large,1,3155760001\n"),
                "t.csv:2: work_s (column 5): \"3155760001\" is beyond 100 years",
            ),
            (
                format!("{h}0,a,ml.m5.large,4294967296,10\n"),
                "t.csv:2: instance_count (column 4): \"4294967296\" is above 4294967295",
            ),
            (
                format!("{h}0,a,ml.m5.large,1.5,10\n"),
                "t.csv:2: instance_count (column 4): \"1.5\" is not a whole number >= 0",
            ),
            (
                "submit_s,share,instance_type,instance_count,work_s,checkpoint_s\n0,a,t,1,10,-5\n"
                    .to_string(),
                "t.csv:2: checkpoint_s (column 6): \"-5\" is negative",
            ),
            (
                "submit_s,share,instance_type,instance_count,work_s,retries\n0,a,t,1,10,99999999999\n"
                    .to_string(),
                "t.csv:2: retries (column 6): \"99999999999\" is above 4294967295",
            ),
            (
                "submit_s,share,instance_type,instance_count,work_s,priority\n0,a,t,1,10,10000\n"
                    .to_string(),
                "t.csv:2: priority (column 6): \"10000\" is above 9999",
            ),
            (
                format!("{h}0,,ml.m5.large,1,10\n"),
                "t.csv:2: share (column 2) is empty",
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

    #[test]
    fn quoted_fields_may_hold_commas_and_lines_stay_right() {
        let t = "name,submit_s,share,instance_type,instance_count,work_s\n\
                 \"a,b\",0,s,ml.m5.large,1,10\n\
                 \"two\n# not a comment\",1,s,ml.m5.large,1,10\n\
                 # a comment, \"with a quote\n\
                 \n\
                 c,x,s,ml.m5.large,1,10\n";
        let e = parse(t, "t.csv").unwrap_err().to_string();
        // The quoted line break and the comment and a blank line make the third record start on line 7.
        assert!(e.starts_with("t.csv:7: submit_s (column 2): \"x\""), "{e}");
        let jobs = parse(&t.replace(",x,", ",2,"), "t.csv").unwrap();
        assert_eq!(jobs[0].name, "a,b");
        assert_eq!(jobs[0].origin, "t.csv:2");
        assert_eq!(jobs[1].name, "two\n# not a comment");
        assert_eq!(jobs[2].origin, "t.csv:7");
    }
}
