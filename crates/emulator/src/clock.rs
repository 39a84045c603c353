//! The simulated clock. Responses carry its time; the engine is advanced to it before every
//! request and by a background ticker.

use std::time::Instant;

use quotatop_model::Millis;

/// How simulated time moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockMode {
    /// `speed` simulated seconds per real second (60.0: one real minute is one simulated hour).
    /// A speed of 0 stands still.
    Scaled(f64),
    /// Time moves only through [`super::EmulatorHandle::advance`]: for deterministic tests.
    Manual,
}

#[derive(Debug, Clone)]
pub struct SimClock {
    mode: ClockMode,
    anchor_real: Instant,
    anchor_sim: Millis,
    /// Simulated time added by explicit advances.
    offset: Millis,
    /// Never go back, whatever the float arithmetic does.
    last: Millis,
}

impl SimClock {
    pub fn new(mode: ClockMode, start: Millis) -> Self {
        Self {
            mode,
            anchor_real: Instant::now(),
            anchor_sim: start,
            offset: 0,
            last: start,
        }
    }

    pub fn mode(&self) -> ClockMode {
        self.mode
    }

    /// The current simulated time, monotonic.
    pub fn now(&mut self) -> Millis {
        let scaled = match self.mode {
            ClockMode::Scaled(speed) if speed > 0.0 => {
                let real = self.anchor_real.elapsed().as_secs_f64() * 1000.0;
                (real * speed).min(1e15) as Millis
            }
            _ => 0,
        };
        let t = self.anchor_sim + scaled + self.offset;
        self.last = self.last.max(t);
        self.last
    }

    /// Moves simulated time forward by `ms` (in any mode).
    pub fn advance(&mut self, ms: Millis) {
        self.offset = self.offset.saturating_add(ms.max(0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let mut c = SimClock::new(ClockMode::Manual, 1_000);
        assert_eq!(c.now(), 1_000);
        c.advance(500);
        assert_eq!(c.now(), 1_500);
        c.advance(-10);
        assert_eq!(c.now(), 1_500);
    }

    #[test]
    fn scaled_clock_runs_faster_than_real_time() {
        let mut c = SimClock::new(ClockMode::Scaled(1000.0), 0);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(c.now() >= 20_000);
    }
}
