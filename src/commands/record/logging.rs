//! `record.log`: `tracing` into a private file of the state directory, rotated by size.

use std::path::{Path, PathBuf};

use crate::commands::log_file::{RotatingLog, Rotation};

/// Sends `tracing` output at `level` and above to `<dir>/<name>` (appended, mode 0600,
/// rotated by size while it runs: [`crate::commands::log_file`]); returns the file's path.
pub fn init_named_file_logging(
    dir: &Path,
    name: &str,
    rotation: Rotation,
    level: tracing::Level,
) -> anyhow::Result<PathBuf> {
    quotatop_store::private_file::create_dir(dir, false)?;
    let path = dir.join(name);
    let file = RotatingLog::open(&path, rotation)?;
    tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(file))
        .with_max_level(level)
        .with_ansi(false)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))?;
    Ok(path)
}
