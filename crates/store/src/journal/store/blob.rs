//! The stored form of a snapshot (gzipped JSON), and a PostgreSQL store's live snapshot row.

use std::io::Write;

use quotatop_model::Snapshot;

use crate::db::{DbError, Exec, vals};
use crate::journal::JournalError;

/// The channel a PostgreSQL store announces each new live snapshot on (`NOTIFY`; its payload
/// is the snapshot's `taken_at`).
pub const LIVE_CHANNEL: &str = "quotatop_snapshot";

/// Replaces the store's live snapshot with `snap` and announces it on [`LIVE_CHANNEL`], in the
/// caller's transaction (a console is told only once the row is committed); a snapshot older
/// than the one there (a second writer behind) never replaces it.
pub(in crate::journal) fn write_live(tx: &mut dyn Exec, snap: &Snapshot) -> Result<(), DbError> {
    let blob = encode(snap)?;
    let written_at = quotatop_model::wall_clock_ms();
    let n = tx.exec(
        "INSERT INTO live_snapshot (id, taken_at, sequence, written_at, data)
         VALUES (1, ?1, ?2, ?3, ?4)
         ON CONFLICT (id) DO UPDATE SET taken_at = excluded.taken_at,
           sequence = excluded.sequence, written_at = excluded.written_at, data = excluded.data
         WHERE live_snapshot.taken_at <= excluded.taken_at",
        &vals![snap.taken_at, snap.sequence as i64, written_at, &blob[..]],
    )?;
    if n > 0 {
        let payload = snap.taken_at.to_string();
        tx.exec(
            &format!("SELECT pg_notify('{LIVE_CHANNEL}', CAST(?1 AS TEXT))"),
            &vals![&payload],
        )?;
    }
    Ok(())
}

pub(super) fn encode(snap: &Snapshot) -> Result<Vec<u8>, DbError> {
    let json = serde_json::to_vec(snap).map_err(|e| DbError::Codec(e.to_string()))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&json)
        .and_then(|_| gz.finish())
        .map_err(|e| DbError::Codec(e.to_string()))
}

pub(in crate::journal) fn decode(blob: &[u8]) -> Result<Snapshot, JournalError> {
    let gz = flate2::read::GzDecoder::new(blob);
    serde_json::from_reader(gz).map_err(|e| JournalError::Codec(e.to_string()))
}
