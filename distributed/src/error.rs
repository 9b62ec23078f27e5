//! Typed errors of the distributed layer.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum DistError {
    #[error(transparent)]
    Alto(#[from] alto::AltoError),
    #[error("{path}: cannot read: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Input that every rank must agree on does not agree (the message says what).
    #[error("{0}")]
    Inconsistent(String),
    /// A buffer could not be allocated, or would exceed `--max-memory`.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// A count does not fit MPI's 32-bit counts.
    #[error("{0} elements exceed MPI's 2^31 - 1 count limit for one message")]
    CountOverflow(u64),
    /// Another rank failed; its own message is printed by that rank.
    #[error("rank {0} failed (its message is above)")]
    OtherRank(usize),
    /// An error every rank met alike (computed from agreed data), printed by rank 0 only.
    #[error(transparent)]
    Collective(Box<DistError>),
}

impl DistError {
    /// Marks an error that every rank meets alike.
    pub fn collective(e: impl Into<DistError>) -> Self {
        DistError::Collective(Box::new(e.into()))
    }

    /// Whether rank `rank` should print this error: the rank where it happened, and rank 0
    /// for errors every rank met.
    pub fn printed_by(&self, rank: usize) -> bool {
        match self {
            DistError::OtherRank(_) => false,
            DistError::Collective(_) => rank == 0,
            _ => true,
        }
    }
}

pub type Result<T> = std::result::Result<T, DistError>;
