//! `quotatop journal migrate`: a journal copied into another store (an SQLite file into a
//! team's PostgreSQL store), in chunks, resumable, then verified row by row.
//!
//! - Each table is read in primary-key order, `chunk` rows at a time; a chunk is written in one
//!   transaction together with how far the copy got (`quotatop_copy_progress`, per source and
//!   table), so an interrupted copy goes on from the last committed chunk. Rows are inserted
//!   with `ON CONFLICT DO NOTHING`: a chunk written twice adds nothing.
//! - [`verify`] reads both stores and checks every source row is in the destination with the
//!   same values (blobs by SHA-256); it counts what is missing or differs.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::{Journal, JournalError};
use crate::db::{Cell, Row, Val, vals};

/// A table of the journal: its columns (the key's first) and how many of them are the key.
struct Table {
    name: &'static str,
    columns: &'static [&'static str],
    key: usize,
}

/// Every table the journal has, in the order they are copied.
const TABLES: &[Table] = &[
    Table {
        name: "queues",
        columns: &[
            "source",
            "name",
            "environment",
            "shares",
            "last_observed_at",
        ],
        key: 2,
    },
    Table {
        name: "share_configs",
        columns: &["source", "queue", "observed_at", "environment", "shares"],
        key: 3,
    },
    Table {
        name: "jobs",
        columns: &[
            "job_id",
            "queue",
            "name",
            "share",
            "priority",
            "instance_type",
            "instance_count",
            "created_at",
            "status",
            "first_seen_at",
            "last_seen_at",
            "preemption_retries",
            "checkpoint_ms",
            "source",
            "class_tag",
        ],
        key: 1,
    },
    Table {
        name: "transitions",
        columns: &[
            "job_id",
            "kind",
            "attempt",
            "at",
            "exact",
            "observed_at",
            "reason",
        ],
        key: 3,
    },
    Table {
        name: "priority_changes",
        columns: &["job_id", "observed_at", "old", "new"],
        key: 2,
    },
    Table {
        name: "usage_samples",
        columns: &[
            "source",
            "queue",
            "share",
            "instance_type",
            "at",
            "used",
            "share_limit",
            "borrowed",
            "lent",
        ],
        key: 5,
    },
    Table {
        name: "snapshots",
        columns: &["taken_at", "sequence", "data"],
        key: 1,
    },
    Table {
        name: "drills",
        columns: &["run_id", "queue", "started_at", "finished_at", "report"],
        key: 1,
    },
    Table {
        name: "checkpoints",
        columns: &["job_id", "key", "written_at", "size", "observed_at"],
        key: 3,
    },
    Table {
        name: "checkpoint_listings",
        columns: &["job_id", "uri", "last_listed_at", "truncated"],
        key: 1,
    },
    Table {
        name: "attempt_marks",
        columns: &[
            "job_id",
            "attempt",
            "signal_at",
            "restored",
            "observed_at",
            "restored_at",
        ],
        key: 2,
    },
];

/// How a copy runs.
#[derive(Debug, Clone, Copy)]
pub struct CopyOptions {
    /// Rows per transaction.
    pub chunk: usize,
    /// Stop after this many chunks (tests of an interrupted copy); `None`: copy everything.
    pub max_chunks: Option<usize>,
}

impl Default for CopyOptions {
    fn default() -> Self {
        Self {
            chunk: 2_000,
            max_chunks: None,
        }
    }
}

/// What a copy did, per table: rows read from the source in this run, rows new in the
/// destination, and rows skipped because an earlier run had copied them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyStats {
    pub tables: Vec<(String, TableCopy)>,
    /// The copy stopped early (`max_chunks`).
    pub interrupted: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableCopy {
    pub read: usize,
    pub inserted: usize,
    pub resumed_from: usize,
}

/// What [`verify`] found, per table: source rows, and of them missing from or different in
/// the destination.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verification {
    pub tables: Vec<(String, TableCheck)>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableCheck {
    pub source_rows: usize,
    pub missing: usize,
    pub different: usize,
}

impl Verification {
    /// Every source row is in the destination, unchanged.
    pub fn ok(&self) -> bool {
        self.tables
            .iter()
            .all(|(_, t)| t.missing == 0 && t.different == 0)
    }
}

const PROGRESS: &str = "CREATE TABLE IF NOT EXISTS quotatop_copy_progress (
    source TEXT NOT NULL, tbl TEXT NOT NULL, done BIGINT NOT NULL, PRIMARY KEY (source, tbl))";

fn has_table(j: &Journal, name: &str) -> Result<bool, JournalError> {
    let sql = match j.dialect() {
        crate::db::Dialect::Sqlite => {
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1"
        }
        crate::db::Dialect::Postgres => "SELECT COUNT(*) FROM pg_tables WHERE tablename = ?1",
    };
    j.run(|x| Ok(x.row(sql, &vals![name])?.map_or(Ok(0), |r| r.int(0))? > 0))
}

fn select_sql(t: &Table) -> String {
    let key = t.columns[..t.key].join(", ");
    format!(
        "SELECT {} FROM {} ORDER BY {key} LIMIT ?1 OFFSET ?2",
        t.columns.join(", "),
        t.name
    )
}

fn insert_sql(t: &Table) -> String {
    let marks: Vec<String> = (1..=t.columns.len()).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING",
        t.name,
        t.columns.join(", "),
        marks.join(", ")
    )
}

fn val(c: &Cell) -> Val<'_> {
    match c {
        Cell::Null => Val::Null,
        Cell::Int(v) => Val::Int(*v),
        Cell::Text(s) => Val::Text(s),
        Cell::Blob(b) => Val::Blob(b),
    }
}

/// Copies every table of `from` into `to` (see the module doc). `source_id` names the source
/// in the progress table (its path); `progress` hears each committed chunk.
pub fn copy(
    from: &Journal,
    to: &Journal,
    source_id: &str,
    opts: CopyOptions,
    progress: &mut dyn FnMut(&str, usize),
) -> Result<CopyStats, JournalError> {
    to.run(|x| x.batch(PROGRESS))?;
    let mut stats = CopyStats::default();
    let mut chunks = 0;
    for t in TABLES {
        if !has_table(from, t.name)? {
            continue;
        }
        let done = to.run(|x| {
            x.row(
                "SELECT done FROM quotatop_copy_progress WHERE source = ?1 AND tbl = ?2",
                &vals![source_id, t.name],
            )?
            .map_or(Ok(0), |r| r.int(0))
        })?;
        let mut tc = TableCopy {
            resumed_from: done as usize,
            ..Default::default()
        };
        let mut offset = done;
        let (select, insert) = (select_sql(t), insert_sql(t));
        loop {
            if opts.max_chunks.is_some_and(|m| chunks >= m) {
                stats.interrupted = true;
                stats.tables.push((t.name.to_string(), tc));
                return Ok(stats);
            }
            let rows = from.run(|x| x.rows(&select, &vals![opts.chunk as i64, offset]))?;
            if rows.is_empty() {
                break;
            }
            let n = rows.len();
            let inserted = to.run_transaction(|x| {
                let mut inserted = 0;
                for r in &rows {
                    let params: Vec<Val<'_>> = r.0.iter().map(val).collect();
                    inserted += x.exec(&insert, &params)?;
                }
                x.exec(
                    "INSERT INTO quotatop_copy_progress (source, tbl, done) VALUES (?1, ?2, ?3)
                     ON CONFLICT (source, tbl) DO UPDATE SET done = excluded.done",
                    &vals![source_id, t.name, offset + n as i64],
                )?;
                Ok(inserted)
            })?;
            offset += n as i64;
            chunks += 1;
            tc.read += n;
            tc.inserted += inserted;
            progress(t.name, offset as usize);
            if n < opts.chunk {
                break;
            }
        }
        stats.tables.push((t.name.to_string(), tc));
    }
    Ok(stats)
}

/// A row as text for comparison: its key, and a digest of every value.
fn canonical(r: &Row, key: usize) -> (String, [u8; 32]) {
    let mut h = Sha256::new();
    let mut k = String::new();
    for (i, c) in r.0.iter().enumerate() {
        let text = match c {
            Cell::Null => "\u{0}null".to_string(),
            Cell::Int(v) => v.to_string(),
            Cell::Text(s) => s.clone(),
            Cell::Blob(b) => format!("{:x}", Sha256::digest(b)),
        };
        if i < key {
            k.push_str(&text);
            k.push('\u{1f}');
        }
        h.update(text.as_bytes());
        h.update([0x1e]);
    }
    (k, h.finalize().into())
}

fn all_rows(j: &Journal, t: &Table) -> Result<Vec<Row>, JournalError> {
    let sql = format!("SELECT {} FROM {}", t.columns.join(", "), t.name);
    j.run(|x| x.rows(&sql, &[]))
}

/// Checks that every row of `from` is in `to` with the same values (see the module doc).
pub fn verify(from: &Journal, to: &Journal) -> Result<Verification, JournalError> {
    let mut out = Verification::default();
    for t in TABLES {
        if !has_table(from, t.name)? {
            continue;
        }
        let dest: HashMap<String, [u8; 32]> = all_rows(to, t)?
            .iter()
            .map(|r| canonical(r, t.key))
            .collect();
        let mut check = TableCheck::default();
        for r in all_rows(from, t)? {
            check.source_rows += 1;
            let (k, h) = canonical(&r, t.key);
            match dest.get(&k) {
                None => check.missing += 1,
                Some(d) if *d != h => check.different += 1,
                Some(_) => {}
            }
        }
        out.tables.push((t.name.to_string(), check));
    }
    Ok(out)
}
