//! A host's wall clock: the time it stamps and checks webhook signatures
//! with. It reads the world's time plus the steps a `skew` of its wall
//! clock made; the host's timers never see it.

use std::cell::Cell;
use std::rc::Rc;

/// A host's wall clock, as far as it departs from the world's time.
/// Clones share the clock.
#[derive(Clone, Debug, Default)]
pub struct WallClock(Rc<Cell<i64>>);

impl WallClock {
    /// Steps it by `ms` (ahead > 0, behind < 0).
    pub fn step(&self, ms: i64) {
        self.0
            .set(self.0.get().saturating_add(ms.saturating_mul(1_000)));
    }

    /// Its reading, µs since the run's start, when the world's time is
    /// `world_us` (a reading before the start is 0).
    pub fn read(&self, world_us: u64) -> u64 {
        world_us.saturating_add_signed(self.0.get())
    }
}

#[cfg(test)]
mod tests {
    use super::WallClock;

    #[test]
    fn a_step_moves_every_clone_and_never_below_zero() {
        let c = WallClock::default();
        let seen = c.clone();
        assert_eq!(seen.read(5_000), 5_000);
        c.step(3);
        assert_eq!(seen.read(5_000), 8_000);
        c.step(-10);
        assert_eq!(seen.read(5_000), 0);
    }
}
