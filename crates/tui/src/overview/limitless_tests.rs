//! Every share of the queue is listed, a share with no capacity limits included, and a share
//! whose configuration AWS says is not valid carries that status (drawn at 100×24).

use crate::keymap::KeyMap;
use crate::theme::Theme;
use crate::{App, AppOptions, Msg, StatusInfo};
use quotatop_analysis::{LoopRule, fixture};
use quotatop_model::{JobStatus, QuotaShare, SharingConfig, Snapshot};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

#[test]
fn a_share_without_limits_is_listed_and_a_share_s_status_shown() {
    let ty = "ml.g5.12xlarge";
    let mut q = fixture::queue(&[("alpha", ty, 4, SharingConfig::lend())]);
    q.shares[0].status = Some("INVALID".into());
    let mut empty = QuotaShare::new("zulu", Vec::new(), SharingConfig::lend());
    empty.status = Some("UPDATING".into());
    q.shares.push(empty);
    q.jobs = vec![fixture::job("a-run", "alpha", ty, 2, JobStatus::Running, 1, 10)];
    let mut app = App::new(AppOptions {
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
    });
    app.update(Msg::Snapshot(Box::new(Snapshot {
        queues: vec![q],
        ..Snapshot::default()
    })));
    let Ok(mut terminal) = Terminal::new(TestBackend::new(100, 24)) else {
        panic!("test backend");
    };
    let _ = terminal.draw(|f| app.draw(f));
    let buf = terminal.backend().buffer();
    let w = usize::from(buf.area.width);
    let lines: Vec<String> = buf
        .content()
        .chunks(w)
        .map(|row| row.iter().map(|c| c.symbol()).collect())
        .collect();
    let text = lines.join("\n");
    let row = |name: &str| lines.iter().find(|l| l.contains(name)).cloned();
    let zulu = row("zulu").unwrap_or_else(|| panic!("no row for the share without limits:\n{text}"));
    assert!(zulu.contains("UPDATING") && zulu.contains("no limits"), "{zulu}\n{text}");
    let alpha = row("alpha").unwrap_or_else(|| panic!("no alpha row:\n{text}"));
    assert!(alpha.contains("INVALID"), "{alpha}\n{text}");
}
