//! Process figures from Linux `/proc`: resident memory (current and peak) and CPU time.

use std::time::Duration;

/// `VmRSS` and `VmHWM` (peak) of a process, in KiB; `None` off Linux or once it is gone.
pub fn memory_kib(pid: &str) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// User plus system CPU time of a process (all its threads).
pub fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let per_second = clock_ticks_per_second()?;
    (per_second > 0).then(|| Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// The kernel's clock ticks per second (what `sysconf(_SC_CLK_TCK)` answers), read from the
/// `AT_CLKTCK` entry of this process's ELF auxiliary vector: no libc call, no `unsafe`.
fn clock_ticks_per_second() -> Option<u64> {
    const AT_CLKTCK: usize = 17;
    let auxv = std::fs::read("/proc/self/auxv").ok()?;
    let words: Vec<usize> = auxv
        .chunks_exact(std::mem::size_of::<usize>())
        .filter_map(|w| w.try_into().ok().map(usize::from_ne_bytes))
        .collect();
    words
        .chunks_exact(2)
        .find(|kv| kv[0] == AT_CLKTCK)
        .map(|kv| kv[1] as u64)
}

/// Resident-memory samples over a run, with the elapsed time of each.
#[derive(Debug, Default, Clone)]
pub struct RssSeries {
    pub samples: Vec<(Duration, u64)>,
}

impl RssSeries {
    pub fn push(&mut self, at: Duration, kib: u64) {
        self.samples.push((at, kib));
    }

    fn in_range(&self, from: Duration, to: Duration) -> impl Iterator<Item = u64> + '_ {
        self.samples
            .iter()
            .filter(move |(t, _)| *t >= from && *t <= to)
            .map(|(_, k)| *k)
    }

    /// Highest sample taken at or before `warm_up` (the baseline).
    pub fn baseline(&self, warm_up: Duration) -> Option<u64> {
        self.in_range(Duration::ZERO, warm_up).max()
    }

    /// How far the highest sample after `warm_up` rises above the baseline, in KiB (0 if not).
    pub fn growth_after(&self, warm_up: Duration) -> Option<u64> {
        let base = self.baseline(warm_up)?;
        let after = self.in_range(warm_up, Duration::MAX).max()?;
        Some(after.saturating_sub(base))
    }

    /// Least-squares slope of the samples after `warm_up`, in KiB per minute.
    pub fn slope_kib_per_min(&self, warm_up: Duration) -> Option<f64> {
        let pts: Vec<(f64, f64)> = self
            .samples
            .iter()
            .filter(|(t, _)| *t > warm_up)
            .map(|(t, k)| (t.as_secs_f64() / 60.0, *k as f64))
            .collect();
        if pts.len() < 3 {
            return None;
        }
        let n = pts.len() as f64;
        let (mx, my) = (
            pts.iter().map(|p| p.0).sum::<f64>() / n,
            pts.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        (sxx > 0.0).then(|| sxy / sxx)
    }

    pub fn peak(&self) -> Option<u64> {
        self.samples.iter().map(|(_, k)| *k).max()
    }
}
