//! ListServiceJobs pagination under churn: between two pages, new jobs are submitted and jobs
//! change status (the clock moves). Reading the pages with the real SDK, page by page, loses no
//! job that existed when the listing began and returns no job twice.

use std::collections::{HashMap, HashSet};

use crate::emulator_support::{M5, QUEUE, create_share, submit};
use aws_sdk_batch::types::{
    KeyValuesPair, QuotaShareResourceSharingStrategy as Strategy, ServiceJobStatus as SdkStatus,
};

/// Every page of one listing; `churn` runs between pages. Returns the ids in page order.
async fn list_with_churn(
    sdk: &aws_sdk_batch::Client,
    status: Option<SdkStatus>,
    mut churn: impl AsyncFnMut(usize),
) -> Vec<String> {
    let mut ids = Vec::new();
    let mut token: Option<String> = None;
    for page in 0.. {
        let mut req = sdk
            .list_service_jobs()
            .job_queue(QUEUE)
            .max_results(4)
            .set_next_token(token.clone());
        req = match &status {
            Some(s) => req.job_status(s.clone()),
            None => req.filters(
                KeyValuesPair::builder()
                    .name("AFTER_CREATED_AT")
                    .values("0")
                    .build(),
            ),
        };
        let out = req.send().await.unwrap();
        ids.extend(
            out.job_summary_list()
                .iter()
                .map(|s| s.job_id().unwrap().to_string()),
        );
        token = out.next_token().map(str::to_string);
        if token.is_none() {
            break;
        }
        churn(page).await;
        assert!(page < 100, "the listing never ends");
    }
    ids
}

fn no_repeats(ids: &[String]) {
    let mut seen = HashSet::new();
    for id in ids {
        assert!(seen.insert(id), "{id} listed twice: {ids:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_lose_nothing_and_repeat_nothing_while_jobs_arrive_and_move() {
    // Two instances for 20 jobs: most wait, and each clock step moves some.
    let h = crate::emulator_support::start(&[(M5, 2)], "").await;
    let sdk = crate::emulator_support::client(&h, 1);
    create_share(&sdk, "team", &[(M5, 2)], Strategy::Reserve, None, false).await;
    let mut before = Vec::new();
    for i in 0..20 {
        before.push(submit(&sdk, &format!("old-{i:02}"), "team", M5, 1, i % 3).await);
        h.advance(10).unwrap(); // distinct createdAt
    }
    let status_of = |h: &quotatop_emulator::EmulatorHandle| -> HashMap<String, String> {
        h.with_engine(|e| {
            e.jobs()
                .map(|j| (j.id.clone(), j.status.as_str().to_string()))
                .collect()
        })
        .unwrap()
    };

    // Every status, newest first: all 20 jobs exist throughout (they only change status).
    let mut added = Vec::new();
    let ids = list_with_churn(&sdk, None, async |page| {
        for k in 0..3 {
            added.push(submit(&sdk, &format!("new-{page}-{k}"), "team", M5, 1, 9).await);
        }
        h.advance(1_000).unwrap();
    })
    .await;
    no_repeats(&ids);
    let listed: HashSet<&String> = ids.iter().collect();
    for id in &before {
        assert!(
            listed.contains(id),
            "{id} existed before the listing and was lost"
        );
    }
    assert!(!added.is_empty(), "churn ran between pages");

    // One status: RUNNABLE jobs that start between pages may leave the listing (they are no
    // longer RUNNABLE), but a job RUNNABLE from the first page to the last is listed once.
    let runnable_at_start: HashSet<String> = status_of(&h)
        .into_iter()
        .filter(|(_, s)| s == "RUNNABLE")
        .map(|(id, _)| id)
        .collect();
    assert!(runnable_at_start.len() > 8, "enough to page through");
    let ids = list_with_churn(&sdk, Some(SdkStatus::Runnable), async |page| {
        submit(&sdk, &format!("late-{page}"), "team", M5, 1, 0).await;
        h.advance(1_000).unwrap();
    })
    .await;
    no_repeats(&ids);
    let now = status_of(&h);
    for id in &runnable_at_start {
        if now.get(id).map(String::as_str) == Some("RUNNABLE") {
            assert!(
                ids.contains(id),
                "{id} was RUNNABLE throughout and was lost"
            );
        }
    }
    h.shutdown().await.unwrap();
}

/// Every page of one ListServiceJobs query, pages of `size`, as (id) in page order.
async fn list_all(
    sdk: &aws_sdk_batch::Client,
    status: Option<SdkStatus>,
    filter: Option<(&str, String)>,
    size: i32,
) -> Vec<String> {
    let mut ids = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut req = sdk
            .list_service_jobs()
            .job_queue(QUEUE)
            .max_results(size)
            .set_job_status(status.clone())
            .set_next_token(token.clone());
        if let Some((name, value)) = &filter {
            req = req.filters(
                KeyValuesPair::builder()
                    .name(*name)
                    .values(value.clone())
                    .build(),
            );
        }
        let out = req.send().await.unwrap();
        ids.extend(
            out.job_summary_list()
                .iter()
                .map(|s| s.job_id().unwrap().to_string()),
        );
        token = out.next_token().map(str::to_string);
        if token.is_none() {
            return ids;
        }
        assert!(ids.len() < 10_000, "the listing never ends");
    }
}

/// The emulator answers a status from its index, a time filter from where the time falls in
/// the submission order: the pages are exactly what checking every job gives, newest first,
/// including jobs created at the filter's very millisecond (left out by both filters) and
/// page boundaries among jobs created at the same time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_time_filters_list_exactly_the_jobs_a_full_check_finds() {
    let h = crate::emulator_support::start(&[(M5, 3)], "").await;
    let sdk = crate::emulator_support::client(&h, 1);
    create_share(&sdk, "team", &[(M5, 3)], Strategy::Reserve, None, false).await;
    // Three jobs at each of eight instants: ties at every time.
    for i in 0..24 {
        submit(&sdk, &format!("j-{i:02}"), "team", M5, 1, i % 4).await;
        if i % 3 == 2 {
            h.advance(1_000).unwrap();
        }
    }
    h.advance(5_000).unwrap();
    // (id, status, createdAt) newest first, as the engine holds them.
    let jobs: Vec<(String, String, i64)> = h
        .with_engine(|e| {
            let mut v: Vec<_> = e
                .jobs()
                .map(|j| (j.id, j.status.as_str().to_string(), j.created_at))
                .collect();
            v.reverse();
            v
        })
        .unwrap();
    let times: Vec<i64> = jobs.iter().map(|j| j.2).collect();
    let (oldest, newest) = (*times.last().unwrap(), times[0]);
    let expect = |keep: &dyn Fn(&(String, String, i64)) -> bool| -> Vec<String> {
        jobs.iter()
            .filter(|j| keep(j))
            .map(|j| j.0.clone())
            .collect()
    };
    for size in [1, 2, 5, 100] {
        for status in ["RUNNABLE", "RUNNING", "SUCCEEDED"] {
            let got = list_all(&sdk, Some(SdkStatus::from(status)), None, size).await;
            assert_eq!(
                got,
                expect(&|j| j.1 == status),
                "{status} in pages of {size}"
            );
        }
        for t in [
            oldest - 1,
            oldest,
            oldest + 1_000,
            newest - 1,
            newest,
            newest + 1,
        ] {
            let before = list_all(&sdk, None, Some(("BEFORE_CREATED_AT", t.to_string())), size);
            assert_eq!(
                before.await,
                expect(&|j| j.2 < t),
                "before {t}, pages of {size}"
            );
            let after = list_all(&sdk, None, Some(("AFTER_CREATED_AT", t.to_string())), size);
            assert_eq!(
                after.await,
                expect(&|j| j.2 > t),
                "after {t}, pages of {size}"
            );
        }
    }
    assert!(
        jobs.iter().any(|j| j.1 == "RUNNABLE") && jobs.iter().any(|j| j.1 == "RUNNING"),
        "the world has jobs waiting and running: {jobs:?}"
    );
    h.shutdown().await.unwrap();
}
