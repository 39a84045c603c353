//! Reading small text files (configuration, themes, scenarios) without trusting their size.

use std::io::Read;
use std::path::Path;

/// The most a configuration-like file may hold: far above any real one, small enough that
/// `--config /dev/zero` or a log file named by mistake ends in an error, not a hang.
pub const MAX_SMALL_FILE: u64 = 4 * 1024 * 1024;

/// The UTF-8 text of `path`, refusing a directory and anything longer than `max` bytes (a
/// device such as `/dev/zero` or `/dev/urandom` never ends, so its size cannot be trusted).
pub fn read_small_text(path: &Path, max: u64) -> std::io::Result<String> {
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
        assert!(e.to_string().contains("longer than"), "{e}");
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
