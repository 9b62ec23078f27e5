//! Where one MTTKRP call's time goes: [`PhaseTimes`], filled by
//! [`mttkrp_profiled`](super::driver::mttkrp_profiled).
//!
//! The driver runs up to three parallel regions per call: zeroing the output, the segments
//! (with the staging buffers zeroed inside the pull strategy's tasks) and the pull reduction.
//! In each region every worker adds the time of the work it ran to its own slot, by phase;
//! when the region ends, the busiest worker's phases are the region's (its critical path) and
//! the region's wall time minus that worker's busy time is fork/join overhead (spawning, load
//! imbalance, idle workers waiting at the join); so is the time to enter the pool (waking its
//! workers) and to leave it. Summed, the phases and the fork/join time add up to the wall time
//! from entering the pool to leaving it; what the call spends outside (checks, planning,
//! carving buffers) is [`PhaseTimes::other`].
//!
//! Unprofiled calls use [`NoClock`], whose methods are empty: the timing compiles away.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Seconds of one MTTKRP call, by phase (see the module documentation for how parallel
/// regions are attributed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    /// Zeroing the output matrix (with lazy zeroing, also finding each chunk's largest row,
    /// which reads the chunk's indices before its kernel does).
    pub zero_output: f64,
    /// Zeroing the pull strategy's staging rows (0 for atomics).
    pub zero_staging: f64,
    /// The kernels over the segments.
    pub kernel: f64,
    /// The pull reduction of staged rows into the output (0 for atomics).
    pub pull: f64,
    /// Parallel regions' wall time minus their busiest worker's busy time, summed, plus the
    /// time to enter and leave the pool.
    pub fork_join: f64,
    /// Wall time of the whole call.
    pub total: f64,
}

impl PhaseTimes {
    /// Field names, in the order of [`values`](Self::values).
    pub const NAMES: [&'static str; 6] = [
        "zero_output",
        "zero_staging",
        "kernel",
        "pull",
        "fork_join",
        "other",
    ];

    /// The call's wall time not in any phase or fork/join (checks, planning, buffer set-up);
    /// never negative.
    pub fn other(&self) -> f64 {
        (self.total - self.phases_sum()).max(0.0)
    }

    /// Sum of the phases and the fork/join time (without [`other`](Self::other)).
    pub fn phases_sum(&self) -> f64 {
        self.zero_output + self.zero_staging + self.kernel + self.pull + self.fork_join
    }

    /// The phases in the order of [`NAMES`](Self::NAMES) (the last is `other`).
    pub fn values(&self) -> [f64; 6] {
        [
            self.zero_output,
            self.zero_staging,
            self.kernel,
            self.pull,
            self.fork_join,
            self.other(),
        ]
    }
}

/// A phase of the work inside a parallel region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    ZeroOutput = 0,
    ZeroStaging = 1,
    Kernel = 2,
    Pull = 3,
}

const PHASES: usize = 4;

/// What the driver reports its timing to. [`NoClock`] records nothing; [`Recorder`] records.
pub(crate) trait Clock: Sync {
    type Stamp: Copy + Send + Sync;
    /// The current time (nothing for [`NoClock`]).
    fn now(&self) -> Self::Stamp;
    /// Adds the time since `since` to the calling worker's `phase`.
    fn busy(&self, phase: Phase, since: Self::Stamp);
    /// Adds the time since `since` to the fork/join overhead (entering or leaving the pool).
    fn overhead(&self, since: Self::Stamp);
    /// Closes the region that started at `started` (call on the orchestrating thread, after
    /// the region's join): folds the busiest worker's phases and the fork/join overhead into
    /// the totals and clears the workers' slots.
    fn end_region(&self, started: Self::Stamp);
}

/// The unprofiled clock: every method is empty and inlined away.
pub(crate) struct NoClock;

impl Clock for NoClock {
    type Stamp = ();
    #[inline(always)]
    fn now(&self) {}
    #[inline(always)]
    fn busy(&self, _: Phase, _: ()) {}
    #[inline(always)]
    fn overhead(&self, _: ()) {}
    #[inline(always)]
    fn end_region(&self, _: ()) {}
}

/// One worker's busy nanoseconds by phase, on its own cache line.
#[repr(align(64))]
#[derive(Default)]
struct Slot([AtomicU64; PHASES]);

/// The profiling clock: per-worker busy time of the current region, and the call's totals.
pub(crate) struct Recorder {
    slots: Vec<Slot>,
    totals: Mutex<PhaseTimes>,
}

impl Recorder {
    /// A recorder for a pool of `workers` threads.
    pub(crate) fn new(workers: usize) -> Self {
        Recorder {
            slots: (0..workers.max(1)).map(|_| Slot::default()).collect(),
            totals: Mutex::new(PhaseTimes::default()),
        }
    }

    /// The totals so far (`total` is left for the caller to set).
    pub(crate) fn totals(&self) -> PhaseTimes {
        *self.totals.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn slot(&self) -> &Slot {
        // Outside a pool (never in the driver) everything lands in slot 0.
        let w = rayon::current_thread_index().unwrap_or(0);
        &self.slots[w % self.slots.len()]
    }
}

impl Clock for Recorder {
    type Stamp = Instant;

    #[inline]
    fn now(&self) -> Instant {
        Instant::now()
    }

    #[inline]
    fn busy(&self, phase: Phase, since: Instant) {
        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.slot().0[phase as usize].fetch_add(ns, Ordering::Relaxed);
    }

    fn overhead(&self, since: Instant) {
        let s = since.elapsed().as_secs_f64();
        self.totals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .fork_join += s;
    }

    fn end_region(&self, started: Instant) {
        let wall = started.elapsed().as_secs_f64();
        let mut busiest = [0u64; PHASES];
        let mut busiest_sum = 0u64;
        for slot in &self.slots {
            let v: [u64; PHASES] = std::array::from_fn(|p| slot.0[p].swap(0, Ordering::Relaxed));
            let sum: u64 = v.iter().sum();
            if sum >= busiest_sum {
                busiest = v;
                busiest_sum = sum;
            }
        }
        let s = |ns: u64| ns as f64 * 1e-9;
        let mut t = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        t.zero_output += s(busiest[Phase::ZeroOutput as usize]);
        t.zero_staging += s(busiest[Phase::ZeroStaging as usize]);
        t.kernel += s(busiest[Phase::Kernel as usize]);
        t.pull += s(busiest[Phase::Pull as usize]);
        t.fork_join += (wall - s(busiest_sum)).max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busiest_worker_sets_the_phases_and_the_rest_is_fork_join() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let rec = Recorder::new(2);
        let start = rec.now();
        pool.broadcast(|ctx| {
            let t = rec.now();
            std::thread::sleep(std::time::Duration::from_millis(2 + 3 * ctx.index() as u64));
            rec.busy(Phase::Kernel, t);
        });
        rec.end_region(start);
        let p = rec.totals();
        assert!(p.kernel >= 0.005, "{p:?}");
        assert!(p.fork_join >= 0.0);
        assert_eq!((p.zero_output, p.zero_staging, p.pull), (0.0, 0.0, 0.0));
        // The slots were cleared: an empty region adds nothing but its wall time.
        let again = rec.now();
        rec.end_region(again);
        assert_eq!(rec.totals().kernel, p.kernel);
    }

    #[test]
    fn other_is_the_rest_of_the_call() {
        let p = PhaseTimes {
            zero_output: 1.0,
            zero_staging: 0.5,
            kernel: 2.0,
            pull: 0.25,
            fork_join: 0.25,
            total: 5.0,
        };
        assert_eq!(p.phases_sum(), 4.0);
        assert_eq!(p.other(), 1.0);
        assert_eq!(p.values()[5], 1.0);
        let short = PhaseTimes { total: 1.0, ..p };
        assert_eq!(short.other(), 0.0);
    }
}
