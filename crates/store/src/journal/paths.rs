//! Where the journal and `record`'s logs live by default.

use std::path::PathBuf;

use directories::ProjectDirs;

use super::JournalError;

fn dirs() -> Result<ProjectDirs, JournalError> {
    ProjectDirs::from("", "", "quotatop").ok_or(JournalError::NoDataDir)
}

/// `<data dir>/journal.sqlite3`, e.g. `~/.local/share/quotatop/journal.sqlite3` on Linux.
pub fn default_journal_path() -> Result<PathBuf, JournalError> {
    Ok(dirs()?.data_dir().join("journal.sqlite3"))
}

/// The state directory (`~/.local/state/quotatop` on Linux; the local data directory where the
/// platform has no state directory): `record` writes its log here.
pub fn state_dir() -> Result<PathBuf, JournalError> {
    let d = dirs()?;
    Ok(d.state_dir()
        .unwrap_or_else(|| d.data_local_dir())
        .to_path_buf())
}
