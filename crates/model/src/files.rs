//! Reading small text files (configuration, themes, scenarios) without trusting their size.

use std::io::Read;
use std::path::Path;

/// The most a configuration-like file may hold: far above any real one, small enough that
/// `--config /dev/zero` or a log file named by mistake ends in an error, not a hang.
pub const MAX_SMALL_FILE: u64 = 4 * 1024 * 1024;

/// The most a trace file may hold (`replay --trace`): far above the largest real trace.
pub const MAX_TRACE_FILE: u64 = 512 * 1024 * 1024;

/// Refuses an input path that is not a regular file (links are followed): a FIFO would block
/// the read for ever, a device such as `/dev/zero` never ends, a directory is no file.
pub fn check_regular_input(path: &Path) -> std::io::Result<()> {
    let t = std::fs::metadata(path)?.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Err(std::io::Error::other(
                "is a FIFO (named pipe), not a file: reading it could wait for ever",
            ));
        }
        if t.is_char_device() || t.is_block_device() {
            return Err(std::io::Error::other("is a device, not a file"));
        }
        if t.is_socket() {
            return Err(std::io::Error::other("is a socket, not a file"));
        }
    }
    if t.is_dir() {
        return Err(std::io::Error::other("is a directory, not a file"));
    }
    Ok(())
}

/// The UTF-8 text of `path`, refusing anything but a regular file (see
/// [`check_regular_input`]) and anything longer than `max` bytes.
pub fn read_small_text(path: &Path, max: u64) -> std::io::Result<String> {
    check_regular_input(path)?;
    let file = std::fs::File::open(path)?;
    if file.metadata()?.is_dir() {
        return Err(std::io::Error::other("is a directory, not a file"));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!(
            "is longer than {} MiB: not a configuration file (a device or a log named by mistake?)",
            max / (1024 * 1024)
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("is not UTF-8 text ({e})"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_and_binary_input_end_in_errors() {
        let e = read_small_text(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(e.to_string().contains("is a device"), "{e}");
        let fifo_dir = tempfile::tempdir().unwrap();
        let fifo = fifo_dir.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let e = read_small_text(&fifo, 1024).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = read_small_text(dir.path(), 1024).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let bin = dir.path().join("bin");
        std::fs::write(&bin, [0xff, 0xfe, 0x00]).unwrap();
        assert!(
            read_small_text(&bin, 1024)
                .unwrap_err()
                .to_string()
                .contains("UTF-8")
        );
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "a = 1\n").unwrap();
        assert_eq!(read_small_text(&ok, 6).unwrap(), "a = 1\n");
        assert!(read_small_text(&ok, 5).is_err());
    }
}
