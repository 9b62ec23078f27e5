//! The errors a kernel call reports ([`KernelError`]).

use super::names::{Isa, KernelId};
use crate::decode::MAX_ORDER;
use core::fmt;

/// Errors a kernel call reports. All but [`KernelError::CoordOutOfRange`] are found before any
/// memory is touched; that one stops the segment where it was found (the sink then holds the
/// contributions of the nonzeros before it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelError {
    /// The kernel's ISA is not available on this CPU.
    IsaUnavailable(Isa),
    /// The kernel is specialized for another rank (or the rank is 0).
    RankMismatch { kernel: KernelId, rank: usize },
    /// Too many modes for the stack coordinate buffer.
    OrderTooLarge(usize),
    /// Fewer than two modes: MTTKRP needs a target and at least one other mode.
    OrderTooSmall(usize),
    /// `idx` and `vals` differ in length.
    LengthMismatch { idx: usize, vals: usize },
    /// Not one factor per mode.
    FactorCount { factors: usize, order: usize },
    /// The target mode does not exist.
    TargetOutOfRange { target: usize, order: usize },
    /// A decoded coordinate is not a row of its factor matrix.
    CoordOutOfRange {
        mode: usize,
        coord: u64,
        rows: usize,
    },
    /// The sink's rows have another width than the rank.
    SinkRank { sink: usize, rank: usize },
    /// A target coordinate is not one of the sink's rows `first .. first + rows`.
    RowOutOfRange { row: u64, first: u64, rows: u64 },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::IsaUnavailable(isa) => {
                write!(f, "kernel ISA {} is not available on this CPU", isa.name())
            }
            KernelError::RankMismatch { kernel, rank } => {
                write!(f, "kernel {kernel} cannot compute rank {rank}")
            }
            KernelError::OrderTooLarge(n) => {
                write!(f, "order {n} exceeds the kernels' maximum of {MAX_ORDER}")
            }
            KernelError::OrderTooSmall(n) => write!(f, "order {n} is below the minimum of 2"),
            KernelError::LengthMismatch { idx, vals } => {
                write!(f, "{idx} indices but {vals} values")
            }
            KernelError::FactorCount { factors, order } => {
                write!(f, "{factors} factor matrices for {order} modes")
            }
            KernelError::TargetOutOfRange { target, order } => {
                write!(
                    f,
                    "target mode {target} does not exist in an order-{order} tensor"
                )
            }
            KernelError::CoordOutOfRange { mode, coord, rows } => {
                write!(
                    f,
                    "mode {mode} coordinate {coord} is outside its factor's {rows} rows"
                )
            }
            KernelError::RowOutOfRange { row, first, rows } => {
                write!(
                    f,
                    "target row {row} is outside the output rows {first}..{}",
                    first + rows
                )
            }
            KernelError::SinkRank { sink, rank } => {
                write!(
                    f,
                    "the output rows have {sink} columns, but the rank is {rank}"
                )
            }
        }
    }
}

impl std::error::Error for KernelError {}
