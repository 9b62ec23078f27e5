//! Hardware and software event counts of a region, summed over every worker of a pool, through
//! Linux `perf_event_open` (the `perf-event2` crate).
//!
//! [`CounterSet::open`] opens one counter per event inside every pool worker (a broadcast, so
//! each counter follows exactly one worker thread) plus system-wide uncore counters where the
//! kernel exposes them; [`CounterSet::measure`] enables them around a closure and reports each
//! event's change over it: a value scaled for multiplexing (`raw * enabled / running`, per
//! counter, then summed), or `unavailable` with the reason. Nothing here fails or panics
//! because of a missing PMU, a permission or an unknown event: those become reasons.
//!
//! Event sets ([`default_events`]):
//! - hardware (portable perf events, user space only): cycles, instructions, cache-references,
//!   cache-misses, branch-misses;
//! - flops (raw vendor events, SPEC section 11): Intel `FP_ARITH_INST_RETIRED` (0xC7; umasks
//!   0x01, 0x04, 0x10, 0x40 weighted 1, 2, 4, 8 doubles), AMD Zen 3 and later
//!   `RETIRED_SSE_AVX_FLOPS` (0x03, all umasks; counts flops of every precision directly);
//! - DRAM (system-wide): the uncore memory controllers' `cas_count_read` / `cas_count_write`
//!   (64 bytes each) where the kernel exposes `uncore_imc_*` PMUs;
//! - software (kernel counting on where permitted): task-clock, page-faults, context-switches.
//!
//! [`CounterReport::derive`] turns them into IPC, flops, GFLOP/s, bytes and operational
//! intensity, falling back to the analytic model of [`crate::harness::model`] (labelled as a model).
//!
//! Inside: [`events`] (what can be counted), [`set`] (opening and measuring), [`report`]
//! (readings and derived metrics), and `sys` (the `perf_event_open` calls).

pub mod events;
pub mod report;
pub mod set;
mod sys;

pub use events::{
    default_events, default_events_at, perf_event_paranoid, EventGroup, EventSource, EventSpec,
    HwEvent, Scope, SwEvent, CYCLES, INSTRUCTIONS, TASK_CLOCK,
};
pub use report::{CounterReport, Derived, EventReading, Events, Quantity, Reading};
pub use set::CounterSet;
