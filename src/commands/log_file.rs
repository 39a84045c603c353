//! The log files of `record` and the console (`record.log`, `console.log` in the state
//! directory): appended, mode 0600, and rotated by size while the program runs. Before a
//! write that would take the file past its limit, `<name>` becomes `<name>.1`, `<name>.1`
//! becomes `<name>.2`, …, the oldest beyond `keep` is dropped, and a new `<name>` is started.
//! A rotation happens only between whole lines (a `tracing` event is one write), so no line is
//! torn across two files and none is lost. Two processes writing one log (two `record` with
//! one `--log-dir`) take turns: each line's rotation check and write hold a lock (flock) on the
//! log's directory, and a writer whose file the other rotated away follows it to the new one.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// How big a log grows and how many rotated files are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// A file is rotated before a write would take it past this many bytes (a single line
    /// longer than this is still written whole, alone in its file).
    pub max_bytes: u64,
    /// Rotated files kept: `<name>.1` (the newest) to `<name>.<keep>`; at least 1.
    pub keep: u32,
}

/// 10 MiB a file, five rotated files: at most 60 MiB of log.
pub const DEFAULT_ROTATION: Rotation = Rotation {
    max_bytes: 10 * 1024 * 1024,
    keep: 5,
};

/// An open log file that rotates itself (see the module's documentation).
#[derive(Debug)]
pub struct RotatingLog {
    path: PathBuf,
    file: File,
    size: u64,
    rotation: Rotation,
    /// The last byte written ended a line: a rotation may happen before the next write.
    at_line_start: bool,
    /// The log's directory, locked (flock) around each line's rotation check and write: two
    /// processes writing one log (two `record` with one `--log-dir`) rotate it one at a time,
    /// and each writes to the file `<name>` is now (they lost lines to each other's renames).
    /// `None` when the directory cannot be opened (the log still works alone).
    dir: Option<File>,
    /// The lock on `dir` is held: taken at a line's first write, released by the write that
    /// ends it, so a line written in pieces (`writeln!` writes each argument on its own) is
    /// never interleaved with the other writer's or split by its rotation.
    locked: bool,
}

impl RotatingLog {
    /// Opens `path` for appending (created 0600; refused when not a regular file).
    pub fn open(path: &Path, rotation: Rotation) -> std::io::Result<Self> {
        let file = quotatop_store::private_file::open(path, "log", true)?;
        let size = file.metadata()?.len();
        let dir = path
            .parent()
            .map(|d| {
                if d.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    d
                }
            })
            .and_then(|d| File::open(d).ok());
        Ok(Self {
            path: path.to_path_buf(),
            file,
            size,
            rotation: Rotation {
                keep: rotation.keep.max(1),
                ..rotation
            },
            at_line_start: true,
            dir,
            locked: false,
        })
    }

    fn numbered(&self, n: u32) -> PathBuf {
        let mut p = self.path.as_os_str().to_owned();
        p.push(format!(".{n}"));
        PathBuf::from(p)
    }

    /// Whether `<name>` is still the file this writes to (another process sharing the log
    /// may have rotated it).
    fn still_ours(&self) -> bool {
        match (std::fs::symlink_metadata(&self.path), self.file.metadata()) {
            (Ok(a), Ok(b)) => same_file(&a, &b),
            _ => false,
        }
    }

    /// Shifts `<name>.N` to `<name>.N+1` (the oldest is replaced), `<name>` to `<name>.1`, and
    /// starts a new `<name>`. When another process (a second `record` with the same log
    /// directory) has rotated it already, this one follows it to the new `<name>` instead of
    /// shifting the files a second time, which would drop a file of lines.
    fn rotate(&mut self) -> std::io::Result<()> {
        if !self.still_ours() {
            self.file = quotatop_store::private_file::open(&self.path, "log", true)?;
            self.size = self.file.metadata()?.len();
            if self.size < self.rotation.max_bytes {
                return Ok(());
            }
        }
        for n in (1..self.rotation.keep).rev() {
            match std::fs::rename(self.numbered(n), self.numbered(n + 1)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        std::fs::rename(&self.path, self.numbered(1))?;
        self.file = quotatop_store::private_file::open(&self.path, "log", true)?;
        self.size = 0;
        Ok(())
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    true
}

impl Write for RotatingLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.at_line_start && !self.locked {
            self.locked = self.dir.as_ref().is_some_and(|d| d.lock().is_ok());
        }
        if self.at_line_start && !self.still_ours() {
            // Another writer rotated it: this line goes to the new `<name>`.
            if let Ok(f) = quotatop_store::private_file::open(&self.path, "log", true) {
                self.size = f.metadata().map_or(0, |m| m.len());
                self.file = f;
            }
        }
        if self.at_line_start
            && self.size > 0
            && self.size.saturating_add(buf.len() as u64) > self.rotation.max_bytes
        {
            // A rotation that fails (a full disk, a read-only directory) leaves the log as it
            // is: the line still goes to the current file.
            let _ = self.rotate();
        }
        let written = self.file.write(buf);
        if let Ok(n) = written {
            self.size += n as u64;
            if n > 0 {
                self.at_line_start = buf[n - 1] == b'\n';
            }
        }
        // The lock is released when the line is complete, or when the write failed (the
        // caller gives up on the line; the other writer must not wait on it).
        if self.locked && (self.at_line_start || written.is_err()) {
            if let Some(d) = &self.dir {
                let _ = d.unlock();
            }
            self.locked = false;
        }
        written
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap_or_default()
    }

    #[test]
    fn rotates_between_lines_and_keeps_the_newest_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let mut log = RotatingLog::open(
            &path,
            Rotation {
                max_bytes: 10,
                keep: 2,
            },
        )
        .unwrap();
        for line in ["aaaa\n", "bbbb\n", "cccc\n", "dddd\n", "eeee\n", "ff\n"] {
            log.write_all(line.as_bytes()).unwrap();
        }
        // A line in two writes is not split by a rotation.
        log.write_all(b"gggg").unwrap();
        log.write_all(b"hhhh\n").unwrap();
        assert_eq!(read(&dir.path().join("x.log.2")), "cccc\ndddd\n");
        assert_eq!(read(&dir.path().join("x.log.1")), "eeee\nff\n");
        assert_eq!(read(&path), "gggghhhh\n");
        assert!(!dir.path().join("x.log.3").exists());
    }

    /// Two writers of one log (two `record` with the same log directory): when one has
    /// rotated, the other follows it to the new file instead of shifting the files again.
    #[test]
    fn a_second_writer_follows_a_rotation_instead_of_rotating_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let rotation = Rotation {
            max_bytes: 20,
            keep: 100,
        };
        let mut a = RotatingLog::open(&path, rotation).unwrap();
        let mut b = RotatingLog::open(&path, rotation).unwrap();
        for i in 0..40 {
            let w = if i % 2 == 0 { &mut a } else { &mut b };
            writeln!(w, "line {i:03}").unwrap();
        }
        let mut lines: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flat_map(|e| {
                let text = read(&e.unwrap().path());
                text.lines().map(str::to_string).collect::<Vec<_>>()
            })
            .collect();
        lines.sort();
        let want: Vec<String> = (0..40).map(|i| format!("line {i:03}")).collect();
        assert_eq!(lines, want);
        // Deterministic (one thread): 13 files when the second writer follows the first's
        // rotations, 19 when each shifts the files again on its own count.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 13);
        // Each file but the last holds more than one line: no rotation left a file behind
        // that the other writer had only just started.
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            if p != path {
                assert!(read(&p).lines().count() > 1, "{}", read(&p));
            }
        }
    }

    #[test]
    fn an_existing_log_over_the_limit_is_rotated_at_the_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        std::fs::write(&path, "0123456789ab\n").unwrap();
        let rotation = Rotation {
            max_bytes: 10,
            keep: 1,
        };
        let mut log = RotatingLog::open(&path, rotation).unwrap();
        // A line longer than the limit is written whole.
        log.write_all(b"a line longer than ten bytes\n").unwrap();
        assert_eq!(read(&dir.path().join("x.log.1")), "0123456789ab\n");
        assert_eq!(read(&path), "a line longer than ten bytes\n");
        log.write_all(b"next\n").unwrap();
        assert_eq!(
            read(&dir.path().join("x.log.1")),
            "a line longer than ten bytes\n"
        );
        assert_eq!(read(&path), "next\n");
    }

    /// Two writers of one log at once (two `record` with one `--log-dir`), rotating every few
    /// lines: with every rotated file kept, every line of both is in one of the files.
    #[test]
    fn two_writers_at_once_lose_no_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let rotation = Rotation {
            max_bytes: 200,
            keep: 1000,
        };
        let writers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut log = RotatingLog::open(&path, rotation).unwrap();
                    for i in 0..1500 {
                        writeln!(log, "{w} {i:05}").unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let mut lines: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !p.to_string_lossy().ends_with(".lock"))
            .flat_map(|p| read(&p).lines().map(str::to_string).collect::<Vec<_>>())
            .collect();
        lines.sort();
        let mut want: Vec<String> = ["a", "b"]
            .iter()
            .flat_map(|w| (0..1500).map(move |i| format!("{w} {i:05}")))
            .collect();
        want.sort();
        // Every line of both writers, whole and once: none lost, torn or interleaved.
        assert!(lines == want, "{} lines kept, want 3000", lines.len());
    }
}
