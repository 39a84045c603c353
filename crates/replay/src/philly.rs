//! The Philly per-virtual-cluster traces (`traces/philly-vc/`): one file per VC, one VC per share.
//! A trace is `trace_<vc>.csv` or, gzip-compressed as the repository ships them,
//! `trace_<vc>.csv.gz`.
//!
//! Mapping (the traces' README): a job of `g` GPUs needs `g` instances of a 1-GPU instance type,
//! its duration is `duration_s`, and a VC's capacity is its node count × 8 GPUs. The node count
//! comes from `philly_vc_nodes.csv`; a VC it does not list is an error unless the caller gives
//! a default (`--default-nodes`).

use std::path::Path;

use super::{JobName, Origin, TraceJob};
use quotatop_model::{Millis, seconds_to_millis};

/// The 1-GPU instance type Philly GPUs are mapped onto.
pub const GPU_INSTANCE_TYPE: &str = "ml.g5.2xlarge";
/// GPUs per Philly node.
pub const GPUS_PER_NODE: u32 = 8;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read {path}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    NoNodes { path: String, message: String },
    #[error("{path}: {message}")]
    Duplicate { path: String, message: String },
    #[error("{path}:{line}: {message}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
}

/// The VC name of `trace_<vc>.csv` (or `trace_<vc>.csv.gz`).
pub fn vc_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let stem = Path::new(name).file_stem()?.to_str()?;
    stem.strip_prefix("trace_").map(str::to_string)
}

/// Whether `path` names a trace file of a trace directory: `trace_<vc>.csv` or
/// `trace_<vc>.csv.gz`.
pub fn is_trace_file_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    vc_of(path).is_some_and(|vc| !vc.is_empty())
        && (name.ends_with(".csv") || name.ends_with(".csv.gz"))
}

/// The text of a file, gunzipped when its name ends in `.gz`.
pub fn read_text(path: &Path) -> Result<String, TraceError> {
    let io = |source| TraceError::Io {
        path: path.display().to_string(),
        source,
    };
    quotatop_model::check_regular_input(path).map_err(io)?;
    if path.extension().is_some_and(|x| x == "gz") {
        use std::io::Read;
        let file = std::fs::File::open(path).map_err(io)?;
        let mut text = String::new();
        // At most MAX_TRACE_FILE bytes once inflated (a small .gz can inflate without end).
        let max = quotatop_model::MAX_TRACE_FILE;
        flate2::read::GzDecoder::new(file)
            .take(max + 1)
            .read_to_string(&mut text)
            .map_err(io)?;
        if text.len() as u64 > max {
            return Err(io(std::io::Error::other(format!(
                "inflates to more than {} MiB: not a trace",
                max / (1024 * 1024)
            ))));
        }
        Ok(text)
    } else {
        quotatop_model::read_small_text(path, quotatop_model::MAX_TRACE_FILE).map_err(io)
    }
}

/// Parses one VC's trace; the share is named after the VC.
pub fn parse_trace(path: &Path) -> Result<Vec<TraceJob>, TraceError> {
    let share = vc_of(path).ok_or_else(|| TraceError::Parse {
        path: path.display().to_string(),
        line: 0,
        message: "file name must be trace_<vc>.csv".to_string(),
    })?;
    parse_trace_text(&read_text(path)?, &share, &path.display().to_string())
}

/// The records of a CSV file after its header, each with its 1-based line.
type Rows = Vec<(usize, csv::StringRecord)>;

/// Reads `text` as CSV with a header; yields (line, record) with exact 1-based line numbers.
fn csv_records(text: &str, path: &str) -> Result<(Vec<String>, Rows), TraceError> {
    let line_at = super::line_index(text);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut header = None;
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| TraceError::Parse {
            path: path.to_string(),
            line: e.position().map_or(1, |p| line_at(p.byte()) as usize),
            message: format!("not valid CSV: {e}"),
        })?;
        let line = record.position().map_or(0, |p| line_at(p.byte()) as usize);
        if header.is_none() {
            header = Some(record.iter().map(str::to_string).collect());
        } else if !record.iter().all(str::is_empty) {
            rows.push((line, record));
        }
    }
    let header = header.ok_or_else(|| TraceError::Parse {
        path: path.to_string(),
        line: 1,
        message: "empty file".to_string(),
    })?;
    Ok((header, rows))
}

/// Parses trace text with columns `app_id,submit_time,service,num_jobs,sleep_time,model_name,
/// duration_s` (header required, columns found by name; RFC 4180 quoting). Times are at most
/// 100 years; errors name the line and the column.
pub fn parse_trace_text(text: &str, share: &str, path: &str) -> Result<Vec<TraceJob>, TraceError> {
    let err = |line: usize, message: String| TraceError::Parse {
        path: path.to_string(),
        line,
        message,
    };
    let (cols, rows) = csv_records(text, path)?;
    let col = |name: &str| {
        cols.iter()
            .position(|c| c == name)
            .ok_or_else(|| err(1, format!("missing column {name}")))
    };
    let (c_id, c_submit, c_gpus, c_duration) = (
        col("app_id")?,
        col("submit_time")?,
        col("num_jobs")?,
        col("duration_s")?,
    );
    let file: std::sync::Arc<str> = path.into();
    let (share_name, gpu_type): (std::sync::Arc<str>, std::sync::Arc<str>) =
        (share.into(), GPU_INSTANCE_TYPE.into());
    let mut jobs = Vec::new();
    for (n, fields) in rows {
        let field = |c: usize| {
            fields
                .get(c)
                .ok_or_else(|| err(n, format!("{} (column {}) is missing", cols[c], c + 1)))
        };
        let secs = |c: usize| -> Result<Millis, TraceError> {
            seconds_to_millis(field(c)?)
                .map_err(|m| err(n, format!("{} (column {}): {m}", cols[c], c + 1)))
        };
        let submit_ms = secs(c_submit)?;
        let gpus_text = field(c_gpus)?;
        let gpus: u32 = gpus_text.parse().map_err(|_| {
            err(
                n,
                format!(
                    "{} (column {}): {gpus_text:?} is not a whole number",
                    cols[c_gpus],
                    c_gpus + 1
                ),
            )
        })?;
        if gpus == 0 {
            return Err(err(
                n,
                format!(
                    "{} (column {}): must be at least 1",
                    cols[c_gpus],
                    c_gpus + 1
                ),
            ));
        }
        let work_ms = secs(c_duration)?;
        jobs.push(TraceJob {
            name: JobName::numbered(&share_name, field(c_id)?),
            origin: Origin::at(&file, n as u64),
            share: share_name.clone(),
            submit_ms,
            instance_type: gpu_type.clone(),
            instance_count: gpus,
            work_ms: work_ms as u64,
            priority: 0,
            checkpoint_interval_ms: None,
            preemption_retries: None,
            extras: Default::default(),
        });
    }
    Ok(jobs)
}

/// `vc,node num` → (vc, nodes). Node counts are whole numbers of at least 1 whose GPUs
/// (× [`GPUS_PER_NODE`]) fit a capacity limit.
pub fn parse_nodes(text: &str, path: &str) -> Result<Vec<(String, u32)>, TraceError> {
    let (_, rows) = csv_records(text, path)?;
    let mut out = Vec::new();
    for (n, fields) in rows {
        let err = |message: String| TraceError::Parse {
            path: path.to_string(),
            line: n,
            message,
        };
        let (Some(vc), Some(nodes)) = (fields.get(0), fields.get(1)) else {
            return Err(err("expected vc,node num".to_string()));
        };
        let count = nodes
            .parse::<u32>()
            .ok()
            .filter(|&c| c >= 1 && c.checked_mul(GPUS_PER_NODE).is_some())
            .ok_or_else(|| {
                err(format!(
                    "node num (column 2): {nodes:?} is not a whole number from 1 to {}",
                    u32::MAX / GPUS_PER_NODE
                ))
            })?;
        out.push((vc.to_string(), count));
    }
    Ok(out)
}

/// One VC's trace and its share capacity.
#[derive(Debug, Clone)]
pub struct VcTrace {
    pub vc: String,
    /// Node count × [`GPUS_PER_NODE`].
    pub gpus: u32,
    pub jobs: Vec<TraceJob>,
    /// The node count is the `--default-nodes` value: the nodes file did not list the VC, or
    /// there was no nodes file.
    pub defaulted_nodes: bool,
}

/// The node count of `vc`: from `nodes` (read from `nodes_path`; `None`: no such file), else
/// `default_nodes`, else an error naming the VC and the trace.
pub fn node_count(
    nodes: Option<&[(String, u32)]>,
    nodes_path: &Path,
    vc: &str,
    trace: &Path,
    default_nodes: Option<u32>,
) -> Result<(u32, bool), TraceError> {
    if let Some(n) = nodes.and_then(|ns| ns.iter().find(|(v, _)| v == vc)) {
        return Ok((n.1, false));
    }
    if let Some(d) = default_nodes {
        return Ok((d, true));
    }
    let why = match nodes {
        Some(_) => format!("{} does not list VC {vc}", nodes_path.display()),
        None => format!("there is no {} next to it", nodes_path.display()),
    };
    Err(TraceError::NoNodes {
        path: trace.display().to_string(),
        message: format!(
            "no node count for VC {vc}: {why}; add it there, or give --default-nodes N to assume N nodes"
        ),
    })
}

/// Every `trace_*.csv` (or `trace_*.csv.gz`) of a directory with its share capacity in GPUs (node count × 8, from its
/// `philly_vc_nodes.csv`). A VC the nodes file does not list is an error unless
/// `default_nodes` is given.
pub fn load_dir(dir: &Path, default_nodes: Option<u32>) -> Result<Vec<VcTrace>, TraceError> {
    let nodes_path = dir.join("philly_vc_nodes.csv");
    let nodes = parse_nodes(&read_text(&nodes_path)?, &nodes_path.display().to_string())?;
    let io = |source| TraceError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_trace_file_name(p))
        .collect();
    paths.sort();
    let mut out: Vec<VcTrace> = Vec::new();
    for p in paths {
        let vc = vc_of(&p).unwrap_or_default();
        if out.iter().any(|t| t.vc == vc) {
            return Err(TraceError::Duplicate {
                path: p.display().to_string(),
                message: format!(
                    "VC {vc} has two traces in {} (trace_{vc}.csv and trace_{vc}.csv.gz); keep one",
                    dir.display()
                ),
            });
        }
        let (n, defaulted_nodes) = node_count(Some(&nodes), &nodes_path, &vc, &p, default_nodes)?;
        out.push(VcTrace {
            jobs: parse_trace(&p)?,
            vc,
            gpus: n.saturating_mul(GPUS_PER_NODE),
            defaulted_nodes,
        });
    }
    Ok(out)
}

/// A single `trace_<vc>.csv` with the node count from the `philly_vc_nodes.csv` next to it.
pub fn load_file(path: &Path, default_nodes: Option<u32>) -> Result<VcTrace, TraceError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let nodes_path = dir.join("philly_vc_nodes.csv");
    let nodes = if nodes_path.exists() {
        Some(parse_nodes(
            &read_text(&nodes_path)?,
            &nodes_path.display().to_string(),
        )?)
    } else {
        None
    };
    let vc = vc_of(path).unwrap_or_default();
    let (n, defaulted_nodes) = node_count(nodes.as_deref(), &nodes_path, &vc, path, default_nodes)?;
    Ok(VcTrace {
        jobs: parse_trace(path)?,
        vc,
        gpus: n.saturating_mul(GPUS_PER_NODE),
        defaulted_nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rows_and_reports_bad_lines() {
        let text = "app_id,submit_time,service,num_jobs,sleep_time,model_name,duration_s\n0,0.0,57.0,1,0.0,M,57\n1,237.5,44.0,4,237.0,M,20\n";
        let jobs = parse_trace_text(text, "vc1", "t.csv").unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[1].submit_ms, 237_500);
        assert_eq!(jobs[1].instance_count, 4);
        assert_eq!(jobs[1].work_ms, 20_000);
        assert_eq!(&*jobs[1].share, "vc1");
        let bad = "app_id,submit_time,service,num_jobs,sleep_time,model_name,duration_s\n0,0.0,57.0,x,0.0,M,57\n";
        let e = parse_trace_text(bad, "vc1", "t.csv")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "t.csv:2: num_jobs (column 4): \"x\" is not a whole number"
        );
        let e = parse_trace_text("a,b\n", "vc1", "t.csv")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "t.csv:1: missing column app_id");
    }

    #[test]
    fn out_of_range_numbers_name_line_and_column_and_quotes_work() {
        let h = "app_id,submit_time,service,num_jobs,sleep_time,model_name,duration_s\n";
        for (row, want) in [
            (
                "0,1e300,1,1,0,M,57",
                "t.csv:2: submit_time (column 2): \"1e300\" is beyond 100 years",
            ),
            (
                "0,0,1,1,0,M,-1",
                "t.csv:2: duration_s (column 7): \"-1\" is negative",
            ),
            (
                "0,NaN,1,1,0,M,1",
                "t.csv:2: submit_time (column 2): \"NaN\" is not a finite number",
            ),
            (
                "0,0,1,1,0,M,inf",
                "t.csv:2: duration_s (column 7): \"inf\" is not a finite number",
            ),
            (
                "0,0,1,4294967296,0,M,1",
                "t.csv:2: num_jobs (column 4): \"4294967296\" is not a whole number",
            ),
            (
                "0,0,1,0,0,M,1",
                "t.csv:2: num_jobs (column 4): must be at least 1",
            ),
            ("0,0,1", "t.csv:2: num_jobs (column 4) is missing"),
        ] {
            let e = parse_trace_text(&format!("{h}{row}\n"), "vc", "t.csv")
                .unwrap_err()
                .to_string();
            assert_eq!(e, want);
        }
        // A quoted model name with a comma; a blank line still counts for line numbers.
        let t = format!("{h}0,0,1,2,0,\"Resnet,50\",60\n\n\"a,b\",1,1,1,0,M,x\n");
        let e = parse_trace_text(&t, "vc", "t.csv").unwrap_err().to_string();
        assert_eq!(
            e,
            "t.csv:4: duration_s (column 7): \"x\" is not a number of seconds"
        );
        let jobs = parse_trace_text(&t.replace(",x", ",9"), "vc", "t.csv").unwrap();
        assert_eq!(jobs[0].instance_count, 2);
        assert_eq!(jobs[1].name, "vc-a,b");
        assert_eq!(jobs[1].origin, "t.csv:4");
    }

    #[test]
    fn node_counts_are_checked_and_never_assumed() {
        let e = parse_nodes("vc,node num\na,0\n", "n.csv").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("n.csv:2: node num (column 2): \"0\""),
            "{e}"
        );
        let e = parse_nodes("vc,node num\na,-3\n", "n.csv").unwrap_err();
        assert!(
            e.to_string().starts_with("n.csv:2: node num (column 2)"),
            "{e}"
        );
        let nodes = parse_nodes("vc,node num\na,4\n", "n.csv").unwrap();
        let (np, tp) = (
            Path::new("d/philly_vc_nodes.csv"),
            Path::new("d/trace_b.csv"),
        );
        assert_eq!(
            node_count(Some(&nodes), np, "a", tp, None).unwrap(),
            (4, false)
        );
        let e = node_count(Some(&nodes), np, "b", tp, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "d/trace_b.csv: no node count for VC b: d/philly_vc_nodes.csv does not list VC b; add it there, or give --default-nodes N to assume N nodes"
        );
        let e = node_count(None, np, "b", tp, None).unwrap_err().to_string();
        assert!(
            e.contains("there is no d/philly_vc_nodes.csv next to it"),
            "{e}"
        );
        assert_eq!(node_count(None, np, "b", tp, Some(2)).unwrap(), (2, true));
    }

    #[test]
    fn load_dir_refuses_an_unlisted_vc_without_a_default() {
        let dir = tempfile::tempdir().unwrap();
        let h = "app_id,submit_time,service,num_jobs,sleep_time,model_name,duration_s\n";
        std::fs::write(
            dir.path().join("trace_a.csv"),
            format!("{h}0,0,1,1,0,M,5\n"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("trace_b.csv"),
            format!("{h}0,0,1,1,0,M,5\n"),
        )
        .unwrap();
        std::fs::write(dir.path().join("philly_vc_nodes.csv"), "vc,node num\na,2\n").unwrap();
        let e = load_dir(dir.path(), None).unwrap_err().to_string();
        assert!(e.contains("no node count for VC b"), "{e}");
        assert!(e.contains("trace_b.csv"), "{e}");
        let vcs = load_dir(dir.path(), Some(3)).unwrap();
        assert_eq!((vcs[0].gpus, vcs[0].defaulted_nodes), (16, false));
        assert_eq!((vcs[1].gpus, vcs[1].defaulted_nodes), (24, true));
    }

    #[test]
    fn vc_from_file_name() {
        assert_eq!(
            vc_of(Path::new("x/trace_6214e9.csv")).as_deref(),
            Some("6214e9")
        );
        assert_eq!(
            vc_of(Path::new("x/trace_6214e9.csv.gz")).as_deref(),
            Some("6214e9")
        );
        assert_eq!(vc_of(Path::new("x/nodes.csv")), None);
        assert!(is_trace_file_name(Path::new("x/trace_a.csv")));
        assert!(is_trace_file_name(Path::new("x/trace_a.csv.gz")));
        assert!(!is_trace_file_name(Path::new("x/trace_a.txt")));
        assert!(!is_trace_file_name(Path::new("x/trace_a.gz")));
        assert!(!is_trace_file_name(Path::new("x/trace_.csv")));
        assert!(!is_trace_file_name(Path::new("x/philly_vc_nodes.csv")));
    }

    fn gzip(text: &str) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(text.as_bytes()).unwrap();
        z.finish().unwrap()
    }

    /// A folder of `.csv.gz` traces (as the repository ships them) loads the same jobs as the
    /// same traces uncompressed; a VC given both ways is refused; a corrupt archive names its
    /// file.
    #[test]
    fn load_dir_reads_gzipped_traces_like_plain_ones() {
        let h = "app_id,submit_time,service,num_jobs,sleep_time,model_name,duration_s\n";
        let a = format!("{h}0,0,1,1,0,M,5\n1,7.5,9,4,7.5,M,3\n");
        let b = format!("{h}0,2,1,2,0,M,11\n");
        let nodes = "vc,node num\na,2\nb,1\n";
        let plain = tempfile::tempdir().unwrap();
        std::fs::write(plain.path().join("trace_a.csv"), &a).unwrap();
        std::fs::write(plain.path().join("trace_b.csv"), &b).unwrap();
        std::fs::write(plain.path().join("philly_vc_nodes.csv"), nodes).unwrap();
        let zipped = tempfile::tempdir().unwrap();
        std::fs::write(zipped.path().join("trace_a.csv.gz"), gzip(&a)).unwrap();
        std::fs::write(zipped.path().join("trace_b.csv.gz"), gzip(&b)).unwrap();
        std::fs::write(zipped.path().join("philly_vc_nodes.csv"), nodes).unwrap();
        let summary = |vcs: Vec<VcTrace>| {
            vcs.into_iter()
                .map(|v| {
                    let jobs: Vec<_> = v
                        .jobs
                        .iter()
                        .map(|j| {
                            (
                                j.submit_ms,
                                j.instance_count,
                                j.work_ms,
                                j.share.to_string(),
                            )
                        })
                        .collect();
                    (v.vc, v.gpus, jobs)
                })
                .collect::<Vec<_>>()
        };
        let want = summary(load_dir(plain.path(), None).unwrap());
        assert_eq!(want.len(), 2);
        assert_eq!(want[0].2.len(), 2);
        assert_eq!(summary(load_dir(zipped.path(), None).unwrap()), want);
        let one = load_file(&zipped.path().join("trace_a.csv.gz"), None).unwrap();
        assert_eq!((one.vc.as_str(), one.gpus, one.jobs.len()), ("a", 16, 2));

        std::fs::write(zipped.path().join("trace_a.csv"), &a).unwrap();
        let e = load_dir(zipped.path(), None).unwrap_err().to_string();
        assert!(e.contains("VC a has two traces"), "{e}");
        std::fs::remove_file(zipped.path().join("trace_a.csv")).unwrap();

        std::fs::write(zipped.path().join("trace_b.csv.gz"), b"not gzip").unwrap();
        let e = load_dir(zipped.path(), None).unwrap_err();
        assert!(e.to_string().contains("trace_b.csv.gz"), "{e}");
    }
}
