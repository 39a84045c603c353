//! Every share of the queue is listed, a share with no capacity limits included, and a share
//! whose configuration AWS says is not valid carries that status (drawn at 100×24).

use quotatop_analysis::fixture;
use quotatop_model::{JobStatus, QuotaShare, SharingConfig};

#[test]
fn a_share_without_limits_is_listed_and_a_share_s_status_shown() {
    let ty = "ml.g5.12xlarge";
    let mut q = fixture::queue(&[("alpha", ty, 4, SharingConfig::lend())]);
    q.shares[0].status = Some("INVALID".into());
    let mut empty = QuotaShare::new("zulu", Vec::new(), SharingConfig::lend());
    empty.status = Some("UPDATING".into());
    q.shares.push(empty);
    q.jobs = vec![fixture::job("a-run", "alpha", ty, 2, JobStatus::Running, 1, 10)];
    let (mut app, mut terminal) = crate::test_app::with_queue(q, 100, 24);
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
