//! Priority bands: `schedulingPriority` (0–9999) grouped for reporting.

use serde::{Deserialize, Serialize};

/// The bands and their ranges (inclusive):
///
/// | band | priorities |
/// |---|---|
/// | low | 0–99 |
/// | normal | 100–999 |
/// | high | 1000–4999 |
/// | critical | 5000–9999 |
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriorityBand {
    Low,
    Normal,
    High,
    Critical,
}

impl PriorityBand {
    pub const ALL: [PriorityBand; 4] = [Self::Low, Self::Normal, Self::High, Self::Critical];

    pub fn of(priority: u32) -> Self {
        match priority {
            0..=99 => Self::Low,
            100..=999 => Self::Normal,
            1000..=4999 => Self::High,
            _ => Self::Critical,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Normal => "normal",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }
    /// The range as text, e.g. `"0-99"`.
    pub fn range(self) -> &'static str {
        match self {
            Self::Low => "0-99",
            Self::Normal => "100-999",
            Self::High => "1000-4999",
            Self::Critical => "5000-9999",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn band_edges() {
        assert_eq!(PriorityBand::of(0), PriorityBand::Low);
        assert_eq!(PriorityBand::of(99), PriorityBand::Low);
        assert_eq!(PriorityBand::of(100), PriorityBand::Normal);
        assert_eq!(PriorityBand::of(999), PriorityBand::Normal);
        assert_eq!(PriorityBand::of(1000), PriorityBand::High);
        assert_eq!(PriorityBand::of(4999), PriorityBand::High);
        assert_eq!(PriorityBand::of(5000), PriorityBand::Critical);
        assert_eq!(PriorityBand::of(9999), PriorityBand::Critical);
    }
}
