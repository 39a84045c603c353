//! Checkpoint storage attributed to a job: the objects under its `CheckpointConfig.S3Uri` as
//! its last listing showed them, and what they cost per month at `[prices] s3_gb_month`. One
//! function ([`checkpoint_storage`]) for `report` and the console's Job detail.

use serde::{Deserialize, Serialize};

/// The `[prices]` key of S3 storage, per GB-month.
pub const S3_PRICE_KEY: &str = "s3_gb_month";

/// Bytes in one GB as S3 bills storage (2^30).
pub const GB: f64 = 1_073_741_824.0;

/// How the figure is computed, said beside it.
pub const METHOD_STORAGE: &str = "checkpoint storage = the objects under the job's CheckpointConfig.S3Uri as its last listing showed them (current objects; versions it replaced or deleted are not counted), their bytes × [prices] s3_gb_month per GB-month (1 GB = 2^30 bytes)";

/// The current checkpoint objects of one job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredObjects {
    pub objects: u64,
    pub bytes: u64,
    /// The listing stopped at its bound: at least this much is stored.
    pub truncated: bool,
}

impl StoredObjects {
    /// The objects of one listing (their sizes), all stored now.
    pub fn of_listing(sizes: impl IntoIterator<Item = u64>, truncated: bool) -> Self {
        let mut s = Self {
            truncated,
            ..Self::default()
        };
        for size in sizes {
            s.objects += 1;
            s.bytes = s.bytes.saturating_add(size);
        }
        s
    }
}

/// A job's checkpoint storage, and its cost per month when a price is known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CheckpointStorage {
    pub objects: u64,
    pub bytes: u64,
    pub truncated: bool,
    /// `bytes / 2^30 × s3_gb_month`; `None` without a price.
    pub cost_per_month: Option<f64>,
}

/// The one computation: `stored` (the job's current objects) at `price_gb_month`.
pub fn checkpoint_storage(stored: StoredObjects, price_gb_month: Option<f64>) -> CheckpointStorage {
    CheckpointStorage {
        objects: stored.objects,
        bytes: stored.bytes,
        truncated: stored.truncated,
        cost_per_month: price_gb_month.map(|p| stored.bytes as f64 / GB * p),
    }
}

/// The price of S3 storage per GB-month from `[prices]` (`s3_gb_month`).
pub fn s3_price(prices: &std::collections::BTreeMap<String, f64>) -> Option<f64> {
    prices.get(S3_PRICE_KEY).copied()
}

impl CheckpointStorage {
    /// GB (2^30 bytes), as billed.
    pub fn gb(&self) -> f64 {
        self.bytes as f64 / GB
    }

    /// In words: "22 objects, 8.20 GB (8,808,040,488 bytes) · 0.19 USD/month (current objects
    /// × s3_gb_month per GB-month)", or without a price "… · no [prices] s3_gb_month".
    pub fn text(&self, currency: Option<&str>) -> String {
        let at_least = if self.truncated { "at least " } else { "" };
        let size = format!(
            "{at_least}{} object{}, {:.2} GB ({} bytes)",
            self.objects,
            if self.objects == 1 { "" } else { "s" },
            self.gb(),
            thousands(self.bytes)
        );
        let currency = currency
            .map(|c| format!(" {}", quotatop_model::clean_text(c)))
            .unwrap_or_default();
        match self.cost_per_month {
            Some(c) => format!(
                "{size} · {c:.2}{currency}/month (current objects × {S3_PRICE_KEY} per GB-month)"
            ),
            None => format!("{size} · no cost: no [prices] {S3_PRICE_KEY}"),
        }
    }
}

/// One job's checkpoint storage, as `report` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobStorage {
    pub job_id: String,
    pub name: String,
    pub share: String,
    #[serde(flatten)]
    pub storage: CheckpointStorage,
}

/// The checkpoint storage of every job whose checkpoints were listed, most bytes first.
pub fn jobs_storage(jobs: &[super::JobHistory], price_gb_month: Option<f64>) -> Vec<JobStorage> {
    let mut out: Vec<JobStorage> = jobs
        .iter()
        .filter_map(|j| {
            let t = j.training.as_ref()?;
            Some(JobStorage {
                job_id: j.job_id.clone(),
                name: j.name.clone(),
                share: j.share.clone(),
                storage: checkpoint_storage(t.stored, price_gb_month),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.storage
            .bytes
            .cmp(&a.storage.bytes)
            .then_with(|| a.name.cmp(&b.name))
    });
    out
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_and_cost_are_the_current_bytes_at_the_price() {
        // 3 checkpoints of one 700 MiB shard and a 212-byte manifest each.
        let stored = StoredObjects {
            objects: 6,
            bytes: 3 * (734_003_200 + 212),
            truncated: false,
        };
        let s = checkpoint_storage(stored, Some(0.023));
        assert_eq!(s.bytes, 2_202_010_236);
        // 2,202,010,236 / 2^30 = 2.050783… GB × 0.023 = 0.04716801…
        let cost = s.cost_per_month.unwrap();
        assert!((cost - 2_202_010_236.0 / 1_073_741_824.0 * 0.023).abs() < 1e-12);
        assert!((cost - 0.047168).abs() < 1e-6, "{cost}");
        assert_eq!(
            s.text(Some("USD")),
            "6 objects, 2.05 GB (2,202,010,236 bytes) · 0.05 USD/month (current objects × s3_gb_month per GB-month)"
        );
        let free = checkpoint_storage(stored, None);
        assert_eq!(free.cost_per_month, None);
        assert!(
            free.text(None)
                .ends_with("no cost: no [prices] s3_gb_month")
        );
        let cut = checkpoint_storage(
            StoredObjects {
                truncated: true,
                objects: 1,
                bytes: 999,
            },
            Some(1.0),
        );
        assert_eq!(
            cut.text(None),
            "at least 1 object, 0.00 GB (999 bytes) · 0.00/month (current objects × s3_gb_month per GB-month)"
        );
        let mut prices = std::collections::BTreeMap::new();
        prices.insert("ml.g5.2xlarge".to_string(), 1.5);
        assert_eq!(s3_price(&prices), None);
        prices.insert(S3_PRICE_KEY.to_string(), 0.023);
        assert_eq!(s3_price(&prices), Some(0.023));
    }
}
