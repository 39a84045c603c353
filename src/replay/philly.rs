//! The Philly per-virtual-cluster traces (`traces/philly-vc/`): one file per VC, one VC per share.
//!
//! Mapping (the traces' README): a job of `g` GPUs needs `g` instances of a 1-GPU instance type,
//! its duration is `duration_s`, and a VC's capacity is its node count × 8 GPUs.

use std::path::Path;

use super::TraceJob;

/// The 1-GPU instance type Philly GPUs are mapped onto.
pub const GPU_INSTANCE_TYPE: &str = "ml.g5.2xlarge";
/// GPUs per Philly node.
pub const GPUS_PER_NODE: u32 = 8;
/// Node count for the VC missing from `philly_vc_nodes.csv` (the traces' README gives it 8).
pub const DEFAULT_NODES: u32 = 8;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
}

/// The VC name of `trace_<vc>.csv`.
pub fn vc_of(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    stem.strip_prefix("trace_").map(str::to_string)
}

fn read(path: &Path) -> Result<String, TraceError> {
    std::fs::read_to_string(path).map_err(|source| TraceError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Parses one VC's trace; the share is named after the VC.
pub fn parse_trace(path: &Path) -> Result<Vec<TraceJob>, TraceError> {
    let share = vc_of(path).ok_or_else(|| TraceError::Parse {
        path: path.display().to_string(),
        line: 0,
        message: "file name must be trace_<vc>.csv".to_string(),
    })?;
    parse_trace_text(&read(path)?, &share, &path.display().to_string())
}

/// Parses trace text with columns `app_id,submit_time,service,num_jobs,sleep_time,model_name,
/// duration_s` (header required).
pub fn parse_trace_text(text: &str, share: &str, path: &str) -> Result<Vec<TraceJob>, TraceError> {
    let err = |line: usize, message: String| TraceError::Parse {
        path: path.to_string(),
        line,
        message,
    };
    let mut lines = text.lines().enumerate();
    let header = lines
        .next()
        .map(|(_, h)| h.trim())
        .ok_or_else(|| err(1, "empty file".to_string()))?;
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let col = |name: &str| {
        cols.iter()
            .position(|c| *c == name)
            .ok_or_else(|| err(1, format!("missing column {name}")))
    };
    let (c_id, c_submit, c_gpus, c_duration) = (
        col("app_id")?,
        col("submit_time")?,
        col("num_jobs")?,
        col("duration_s")?,
    );
    let mut jobs = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let field = |c: usize, name: &str| {
            fields
                .get(c)
                .copied()
                .ok_or_else(|| err(n, format!("missing {name}")))
        };
        let submit: f64 = field(c_submit, "submit_time")?
            .parse()
            .map_err(|_| err(n, "submit_time is not a number".to_string()))?;
        let gpus: u32 = field(c_gpus, "num_jobs")?
            .parse()
            .map_err(|_| err(n, "num_jobs is not a whole number".to_string()))?;
        let duration: f64 = field(c_duration, "duration_s")?
            .parse()
            .map_err(|_| err(n, "duration_s is not a number".to_string()))?;
        if !submit.is_finite() || submit < 0.0 {
            return Err(err(n, format!("submit_time {submit} must be >= 0")));
        }
        if gpus == 0 {
            return Err(err(n, "num_jobs must be at least 1".to_string()));
        }
        if !duration.is_finite() || duration < 0.0 {
            return Err(err(n, format!("duration_s {duration} must be >= 0")));
        }
        jobs.push(TraceJob {
            name: format!("{share}-{}", field(c_id, "app_id")?),
            origin: format!("{path}:{n}"),
            share: share.to_string(),
            submit_ms: (submit * 1000.0).round() as i64,
            instance_type: GPU_INSTANCE_TYPE.to_string(),
            instance_count: gpus,
            work_ms: (duration * 1000.0).round() as u64,
            priority: 0,
            checkpoint_interval_ms: None,
            preemption_retries: None,
            deadline_s: None,
        });
    }
    Ok(jobs)
}

/// `vc,node num` → (vc, nodes).
pub fn parse_nodes(text: &str, path: &str) -> Result<Vec<(String, u32)>, TraceError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let mut parts = line.split(',').map(str::trim);
        let (Some(vc), Some(nodes)) = (parts.next(), parts.next()) else {
            return Err(TraceError::Parse {
                path: path.to_string(),
                line: i + 1,
                message: "expected vc,node num".to_string(),
            });
        };
        let nodes = nodes.parse().map_err(|_| TraceError::Parse {
            path: path.to_string(),
            line: i + 1,
            message: format!("node count {nodes:?} is not a whole number"),
        })?;
        out.push((vc.to_string(), nodes));
    }
    Ok(out)
}

/// Every `trace_*.csv` of a directory with its share capacity in GPUs (node count × 8).
pub fn load_dir(dir: &Path) -> Result<Vec<(String, u32, Vec<TraceJob>)>, TraceError> {
    let nodes_path = dir.join("philly_vc_nodes.csv");
    let nodes = parse_nodes(&read(&nodes_path)?, &nodes_path.display().to_string())?;
    let io = |source| TraceError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| vc_of(p).is_some() && p.extension().is_some_and(|x| x == "csv"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        let vc = vc_of(&p).unwrap_or_default();
        let n = nodes
            .iter()
            .find(|(v, _)| *v == vc)
            .map_or(DEFAULT_NODES, |(_, n)| *n);
        out.push((vc, n * GPUS_PER_NODE, parse_trace(&p)?));
    }
    Ok(out)
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
        assert_eq!(jobs[1].share, "vc1");
        let bad = "app_id,submit_time,service,num_jobs,sleep_time,model_name,duration_s\n0,0.0,57.0,x,0.0,M,57\n";
        let e = parse_trace_text(bad, "vc1", "t.csv")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "t.csv:2: num_jobs is not a whole number");
        let e = parse_trace_text("a,b\n", "vc1", "t.csv")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "t.csv:1: missing column app_id");
    }

    #[test]
    fn vc_from_file_name() {
        assert_eq!(
            vc_of(Path::new("x/trace_6214e9.csv")).as_deref(),
            Some("6214e9")
        );
        assert_eq!(vc_of(Path::new("x/nodes.csv")), None);
    }
}
