//! The files quotatop owns (the journal, the audit log, its lock and in-flight marks, logs):
//! each must be a regular file, or absent, in a directory. A device (`/dev/null`), a FIFO, a
//! socket, a directory or a symbolic link named as one is refused before anything is created,
//! opened for writing or chmodded beside it: run as root, `--journal /dev/null` used to set
//! `/dev/null` to 0600 and create `/dev/null-journal`, `/dev/null.lock`, `/dev/null.inflight/`.

use std::fs::{File, OpenOptions};
use std::path::Path;

/// What is at `path` when it is not a regular file, in words (`None`: a regular file, or
/// nothing). Links are not followed.
fn not_regular(path: &Path) -> std::io::Result<Option<&'static str>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(kind_of(meta.file_type()))
}

fn kind_of(t: std::fs::FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_char_device() || t.is_block_device() {
            return Some("a device");
        }
        if t.is_socket() {
            return Some("a socket");
        }
    }
    if t.is_symlink() {
        Some("a symbolic link")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_file() {
        None
    } else {
        Some("not a regular file")
    }
}

fn refusal(path: &Path, what: &str, kind: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{} is {kind}: the {what} must be a regular file (or not exist yet) in a directory, so nothing was written, created or chmodded; name a file such as ./{}",
            path.display(),
            default_name(what)
        ),
    )
}

fn default_name(what: &str) -> &'static str {
    if what.contains("journal") {
        "journal.sqlite3"
    } else if what.contains("audit") {
        "audit.jsonl"
    } else {
        "quotatop.log"
    }
}

/// Refuses `path` (with a message naming `what` it was meant to be, e.g. "journal") unless it
/// is a regular file or absent, and its directory, when it exists, is a directory. Nothing is
/// created or changed.
pub fn check(path: &Path, what: &str) -> std::io::Result<()> {
    if path.as_os_str().is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("the {what} path is empty: name a file"),
        ));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(meta) = std::fs::metadata(dir)
        && !meta.is_dir()
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is not a directory, so the {what} {} cannot be kept there",
                dir.display(),
                path.display()
            ),
        ));
    }
    check_kind(path, what)
}

/// [`check`]'s refusal of what is at `path` alone (a missing or unusable directory is left to
/// the open, which may be retried once it exists).
pub fn check_kind(path: &Path, what: &str) -> std::io::Result<()> {
    match not_regular(path) {
        Ok(Some(kind)) => Err(refusal(path, what, kind)),
        // A path under a file, or not readable: the open says why.
        Ok(None) | Err(_) => Ok(()),
    }
}

/// Creates `dir` (and its parents) mode 0700 where missing; refuses a `dir` that exists as
/// anything but a directory, and, with `own`, one that is a symbolic link (a directory
/// quotatop names itself, such as `<log>.inflight`, is never followed).
pub fn create_dir(dir: &Path, own: bool) -> std::io::Result<()> {
    if own && let Ok(meta) = std::fs::symlink_metadata(dir) {
        if meta.file_type().is_symlink() || !meta.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} is {} where quotatop keeps a directory of its own; nothing was written there",
                    dir.display(),
                    kind_of(meta.file_type()).unwrap_or("a regular file")
                ),
            ));
        }
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Opens (creating it, mode 0600, its directory 0700) the regular file `path` for reading and
/// appending (`append`) or writing; refuses anything else (see [`check`]) without following a
/// link or blocking on a FIFO, and sets an existing file's looser mode to 0600 only once it is
/// known to be a regular file.
pub fn open(path: &Path, what: &str, append: bool) -> std::io::Result<File> {
    check(path, what)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir(dir, false)?;
    }
    open_checked(path, what, append)
}

/// [`open`] after its check: what is at `path` may have been replaced since, so what was
/// opened is checked again (by `fstat`) before anything is changed.
fn open_checked(path: &Path, what: &str, append: bool) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).create(true).append(append);
    if !append {
        opts.write(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Between the check and the open the path may have been replaced: never follow a link,
        // never wait on a FIFO's other end.
        opts.mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = opts.open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            refusal(path, what, "a symbolic link")
        } else {
            e
        }
    })?;
    let meta = file.metadata()?;
    if let Some(kind) = kind_of(meta.file_type()) {
        return Err(refusal(path, what, kind));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o777 != 0o600 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mkfifo(p: &Path) {
        let st = std::process::Command::new("mkfifo")
            .args(["-m", "644"])
            .arg(p)
            .status()
            .unwrap();
        assert!(st.success());
    }

    #[test]
    fn fifos_links_directories_and_devices_are_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let target = dir.path().join("target");
        std::fs::write(&target, "theirs").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        for (p, kind) in [
            (&fifo, "a FIFO"),
            (&link, "a symbolic link"),
            (&sub, "a directory"),
        ] {
            let e = open(p, "journal", true).unwrap_err();
            assert!(e.to_string().contains(kind), "{e}");
            assert!(e.to_string().contains("nothing was written"), "{e}");
        }
        // /dev/null is only looked at, never opened.
        let e = check(Path::new("/dev/null"), "audit log").unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        assert_eq!(
            std::fs::metadata(&fifo).unwrap().permissions().mode() & 0o777,
            0o644
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
        assert_eq!(
            std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
            0o644
        );
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["fifo", "link", "sub", "target"]);
        // A file under a regular file: its "directory" is not one.
        let e = open(&target.join("x"), "audit log", true).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        // A regular file is opened and made private; an own directory that is a link refused.
        let ok = dir.path().join("new/audit.jsonl");
        open(&ok, "audit log", true).unwrap();
        assert_eq!(
            std::fs::metadata(&ok).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let own = dir.path().join("own");
        std::os::unix::fs::symlink(&sub, &own).unwrap();
        assert!(create_dir(&own, true).is_err());
        create_dir(&sub, true).unwrap();
    }

    /// A FIFO put where a regular file was checked (swapped between [`check`] and the open):
    /// the open itself does not block (`O_NONBLOCK`) and succeeds on a FIFO, so only the
    /// `fstat` of what was opened refuses it, before its mode is touched.
    #[test]
    fn a_file_swapped_for_a_fifo_after_the_check_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.sqlite3");
        std::fs::write(&p, "").unwrap();
        check(&p, "journal").unwrap();
        std::fs::remove_file(&p).unwrap();
        mkfifo(&p);
        for append in [true, false] {
            let e = open_checked(&p, "journal", append).unwrap_err();
            assert!(e.to_string().contains("a FIFO"), "{e}");
        }
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o644
        );
    }

    #[test]
    fn the_journal_and_the_audit_log_refuse_a_fifo_and_make_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let e = crate::journal::Journal::open(&fifo, crate::journal::JournalConfig::default())
            .err()
            .unwrap();
        assert!(
            quotatop_model::error_chain(&e).contains("a FIFO"),
            "{}",
            quotatop_model::error_chain(&e)
        );
        let log = crate::audit::AuditLog::new(&fifo);
        let e = log.begin_change("c-1").unwrap_err();
        assert!(quotatop_model::error_chain(&e).contains("a FIFO"));
        assert!(log.lock().is_err());
        // A link where the in-flight directory goes is not followed.
        let real = dir.path().join("audit.jsonl");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("audit.jsonl.inflight")).unwrap();
        assert!(
            crate::audit::AuditLog::new(&real)
                .begin_change("c-2")
                .is_err()
        );
        assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["audit.jsonl.inflight", "elsewhere", "fifo"]);
        assert_eq!(
            std::fs::metadata(&fifo).unwrap().permissions().mode() & 0o777,
            0o644
        );
    }
}
