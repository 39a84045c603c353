//! Temporary paths for tests that are removed when the test ends, pass or fail: a path is only
//! handed out together with the [`tempfile::TempDir`] that holds it, so none can outlive its
//! test (earlier helpers named `quotatop-…-<pid>-<n>` directories in /tmp and left them there).

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A path inside a fresh private temporary directory, which is removed when this is dropped.
/// Derefs to the path, so it is used where a `&Path` or `&PathBuf` is.
pub struct TempPath {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Deref for TempPath {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.path
    }
}

impl AsRef<Path> for TempPath {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for TempPath {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

/// A fresh directory named `quotatop-<name>-XXXXXX` in the system's temporary directory.
pub fn dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("quotatop-{name}-"))
        .tempdir()
        .expect("a temporary directory")
}

/// A fresh temporary directory named after `name`, used as a path (`d.join("x")`).
pub fn dir_path(name: &str) -> TempPath {
    let dir = dir(name);
    TempPath {
        path: dir.path().to_path_buf(),
        _dir: dir,
    }
}

/// `file` (not created) in a fresh temporary directory named after `name`.
pub fn path(name: &str, file: &str) -> TempPath {
    let dir = dir(name);
    TempPath {
        path: dir.path().join(file),
        _dir: dir,
    }
}
