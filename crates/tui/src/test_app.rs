//! The console as the unit tests build it: default options on a fixed clock, one snapshot of
//! one queue applied, and a test backend of a given size.

use crate::keymap::KeyMap;
use crate::theme::Theme;
use crate::{App, AppOptions, Msg, StatusInfo};
use quotatop_analysis::LoopRule;
use quotatop_model::{QueueSnapshot, Snapshot};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The options every unit test starts from: the dark theme, the default keys, the clock at
/// 1,000,000 ms.
pub fn options() -> AppOptions {
    AppOptions {
        theme: Theme::dark(),
        no_color: false,
        theme_dir: None,
        keymap: KeyMap::default(),
        status: StatusInfo::default(),
        queue: None,
        loop_rule: LoopRule::default(),
        clock: Box::new(|| 1_000_000),
        warnings: Vec::new(),
        door: Default::default(),
        storage_price: Default::default(),
    }
}

/// A console showing queue `q`, and a `width`×`height` test terminal.
pub fn with_queue(q: QueueSnapshot, width: u16, height: u16) -> (App, Terminal<TestBackend>) {
    let mut app = App::new(options());
    app.update(Msg::Snapshot(Box::new(Snapshot {
        queues: vec![q],
        ..Snapshot::default()
    })));
    let Ok(terminal) = Terminal::new(TestBackend::new(width, height)) else {
        panic!("test backend");
    };
    (app, terminal)
}
