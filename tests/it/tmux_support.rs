//! A real terminal for the console's tests: a tmux server of its own, its socket in the test's
//! directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of its own (its socket in the test's directory), killed on drop.
pub struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket);
        c
    }

    pub fn start(dir: &Path, width: u16, height: u16, command: &str) -> Self {
        assert!(
            Command::new("tmux")
                .arg("-V")
                .output()
                .is_ok_and(|o| o.status.success()),
            "`tmux` is not installed: this test needs it (apt-get install tmux)"
        );
        let t = Self {
            socket: dir.join("tmux.sock"),
        };
        let ok = t
            .cmd()
            .args(["new-session", "-d", "-s", "q", "-x"])
            .arg(width.to_string())
            .arg("-y")
            .arg(height.to_string())
            .arg(command)
            .status()
            .unwrap();
        assert!(ok.success(), "tmux new-session failed");
        t
    }

    pub fn screen(&self) -> String {
        let o = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "q"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).to_string()
    }

    /// Keys as tmux names them (`Enter`, `Tab`, `Escape`, `C-k`, `C-c`) or literal text (`-l`).
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            let named = matches!(
                *k,
                "Enter" | "Tab" | "Escape" | "C-k" | "C-c" | "Left" | "Right" | "NPage"
            );
            let mut c = self.cmd();
            c.args(["send-keys", "-t", "q"]);
            if !named {
                c.arg("-l");
            }
            assert!(c.arg(k).status().unwrap().success());
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Waits (at most 60 s: CI runs hundreds of tests beside this one) for `text` on the
    /// screen; the screen.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_all(&[text])
    }

    /// Waits (at most 60 s) for one screen holding every one of `texts`; that screen. A screen
    /// caught between two draws holds some and not the others: asserting on it races the console.
    pub fn wait_all(&self, texts: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let s = self.screen();
            if texts.iter().all(|t| s.contains(t)) {
                return s;
            }
            let missing: Vec<&&str> = texts.iter().filter(|t| !s.contains(**t)).collect();
            assert!(Instant::now() < deadline, "never showed {missing:?}:\n{s}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}
