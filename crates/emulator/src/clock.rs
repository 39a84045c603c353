//! The simulated clock. Responses carry its time; the engine is advanced to it before every
//! request and by a background ticker.
//!
//! # Never in the client's future
//!
//! A client compares the times the API returns with its own clock (`BEFORE_CREATED_AT` = now,
//! a job's age), so a [`ClockMode::Scaled`] clock never reads later than the wall clock:
//! - unless a start is given, it starts [`ACCELERATED_FOR`] × (speed − 1) behind the wall
//!   clock (at 60×: 59 days), so it runs accelerated for a day of real time before it reaches
//!   the wall clock;
//! - it is capped at the wall clock: once there (or with a given start too late for the
//!   speed) it moves at real time.
//!
//! Resources (environments, queues) settle on a second clock, [`SimClock::settle_ms`]: real time
//! plus explicit advances, so a `--speed 0` world can still be set up.
//!
//! [`ClockMode::Manual`] is the deterministic test hook: time moves only by explicit advances,
//! from the given start, uncapped.

use std::time::{Duration, Instant};

use quotatop_model::{Millis, wall_clock_ms};

/// How long (real time) a scaled clock that started at its default runs accelerated before it
/// reaches the wall clock.
pub const ACCELERATED_FOR: Duration = Duration::from_secs(24 * 3600);

/// How simulated time moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockMode {
    /// `speed` simulated seconds per real second (60.0: one real minute is one simulated hour),
    /// never ahead of the wall clock. A speed of 0 stands still.
    Scaled(f64),
    /// Time moves only through [`super::EmulatorHandle::advance`]: for deterministic tests.
    Manual,
}

impl ClockMode {
    /// Where a clock of this mode starts when no start is given, with the wall clock at
    /// `wall`: that far behind it that the clock reaches it after [`ACCELERATED_FOR`].
    pub fn default_start(self, wall: Millis) -> Millis {
        match self {
            ClockMode::Scaled(speed) if speed > 1.0 => {
                let behind = ACCELERATED_FOR.as_secs_f64() * 1000.0 * (speed - 1.0);
                wall.saturating_sub(behind.min(1e15) as Millis)
            }
            _ => wall,
        }
    }
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
    /// The wall clock (epoch ms), replaceable in tests.
    wall: fn() -> Millis,
}

impl SimClock {
    pub fn new(mode: ClockMode, start: Millis) -> Self {
        Self::with_wall(mode, start, wall_clock_ms)
    }

    /// A clock capped by `wall` instead of the system clock (for tests).
    pub fn with_wall(mode: ClockMode, start: Millis, wall: fn() -> Millis) -> Self {
        Self {
            mode,
            anchor_real: Instant::now(),
            anchor_sim: start,
            offset: 0,
            last: start,
            wall,
        }
    }

    pub fn mode(&self) -> ClockMode {
        self.mode
    }

    /// The current simulated time, monotonic; in [`ClockMode::Scaled`] never after the wall
    /// clock (unless the clock started after it, where it stands still until the wall clock
    /// catches up).
    pub fn now(&mut self) -> Millis {
        let t = match self.mode {
            ClockMode::Scaled(speed) => {
                let real = self.anchor_real.elapsed().as_secs_f64() * 1000.0;
                let scaled = if speed > 0.0 {
                    (real * speed).min(1e15) as Millis
                } else {
                    0
                };
                let t = self
                    .anchor_sim
                    .saturating_add(scaled)
                    .saturating_add(self.offset);
                t.min((self.wall)())
            }
            ClockMode::Manual => self.anchor_sim.saturating_add(self.offset),
        };
        self.last = self.last.max(t);
        self.last
    }

    /// Moves simulated time forward by `ms` (in any mode; a scaled clock still stops at the
    /// wall clock). Resources settle by it too ([`SimClock::settle_ms`]).
    pub fn advance(&mut self, ms: Millis) {
        self.offset = self.offset.saturating_add(ms.max(0));
    }

    /// The clock resources settle by: real milliseconds since start plus explicit advances,
    /// whatever the speed.
    pub fn settle_ms(&self) -> Millis {
        let real = Millis::try_from(self.anchor_real.elapsed().as_millis()).unwrap_or(Millis::MAX);
        match self.mode {
            ClockMode::Scaled(_) => real.saturating_add(self.offset),
            // A manual clock is for deterministic tests: only advances move it.
            ClockMode::Manual => self.offset,
        }
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
        assert_eq!(c.settle_ms(), 500);
    }

    #[test]
    fn scaled_clock_runs_faster_than_real_time() {
        let mut c = SimClock::new(ClockMode::Scaled(1000.0), 0);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(c.now() >= 20_000);
    }

    fn fixed_wall() -> Millis {
        1_000_000
    }

    #[test]
    fn a_scaled_clock_stops_at_the_wall_clock() {
        let mut c = SimClock::with_wall(ClockMode::Scaled(3600.0), 999_000, fixed_wall);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(c.now(), 1_000_000);
        c.advance(60_000);
        assert_eq!(c.now(), 1_000_000);
    }

    #[test]
    fn the_default_start_is_a_day_of_acceleration_behind() {
        let wall = 10_000_000_000_000;
        let day = 24 * 3_600_000;
        assert_eq!(ClockMode::Scaled(61.0).default_start(wall), wall - 60 * day);
        assert_eq!(ClockMode::Scaled(1.0).default_start(wall), wall);
        assert_eq!(ClockMode::Scaled(0.0).default_start(wall), wall);
        assert_eq!(ClockMode::Manual.default_start(wall), wall);
    }
}
