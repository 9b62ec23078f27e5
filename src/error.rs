//! Typed errors of the library. Every input error names its file (and line, where there is one).

use std::path::PathBuf;
use thiserror::Error;

/// What is wrong with one line of a `.tns` file.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum TnsLineError {
    #[error("expected {expected} tokens ({order} indices and a value), found {found}")]
    TokenCount {
        expected: usize,
        order: usize,
        found: usize,
    },
    #[error("mode {mode} index `{token}` is not a positive integer")]
    BadIndex { mode: usize, token: String },
    #[error("mode {mode} index is 0, but FROSTT indices are 1-based")]
    ZeroIndex { mode: usize },
    #[error("mode {mode} index {index} exceeds the declared dimension {dim}")]
    IndexAboveDim { mode: usize, index: u64, dim: u64 },
    #[error("value `{token}` is not a number")]
    BadValue { token: String },
    #[error("value `{token}` is not finite")]
    NonFiniteValue { token: String },
    #[error("a line must hold at least 2 indices and a value (order >= 2), found {found} tokens")]
    OrderTooSmall { found: usize },
    #[error("the line is not valid UTF-8 text")]
    NotText,
}

#[derive(Debug, Error)]
pub enum AltoError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {error}")]
    TnsLine {
        path: PathBuf,
        line: u64,
        error: TnsLineError,
    },
    #[error("{path}: the tensor has no nonzeros")]
    EmptyTensor { path: PathBuf },
    #[error("{path}: declared dims have {declared} modes but the file has order {found}")]
    DimsOrderMismatch {
        path: PathBuf,
        declared: usize,
        found: usize,
    },
    #[error("tensor needs {bits} index bits in total; ALTO supports at most 128")]
    TooManyBits { bits: u32 },
    #[error("{path}: the tensor needs {bits} index bits in total; ALTO supports at most 128")]
    FileTooManyBits { path: PathBuf, bits: u32 },
    #[error("order {order} is not supported: need 2 <= order <= {max}")]
    UnsupportedOrder { order: usize, max: usize },
    #[error("dimension {dim} of mode {mode} is invalid (must be at least 1)")]
    BadDim { mode: usize, dim: u64 },
    #[error("{path}: not an ALTO binary file ({reason})")]
    BadBinary { path: PathBuf, reason: String },
    #[error("{path}: {reason}")]
    BadNpy { path: PathBuf, reason: String },
    #[error(
        "not enough memory: building needs about {needed} bytes ({needed_gib:.2} GiB) \
         but only {available} bytes ({available_gib:.2} GiB) are available"
    )]
    OutOfMemory {
        needed: u64,
        available: u64,
        needed_gib: f64,
        available_gib: f64,
    },
    /// A command's memory plan exceeds what the process may use (see [`crate::memory`]).
    #[error(
        "not enough memory: this needs {} ({plan}), but {} is available ({limit}); \
         {hint}, or set the limit with --max-memory",
        crate::memory::human_bytes(*needed),
        crate::memory::human_bytes(*available)
    )]
    MemoryLimit {
        needed: u64,
        available: u64,
        plan: String,
        limit: &'static str,
        hint: String,
    },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A CP-ALS option that cannot work for this tensor; `option` is the field of
    /// [`crate::cpd::CpdOptions`] (`rank`, `max_iters`, `tol`) or `init`.
    #[error("CP-ALS option `{option}`: {reason}")]
    CpdOption {
        option: &'static str,
        reason: String,
    },
    /// A CP-APR option that cannot work for this tensor; `option` is the field of
    /// [`crate::cpd::apr::AprOptions`] or `init`.
    #[error("CP-APR option `{option}`: {reason}")]
    AprOption {
        option: &'static str,
        reason: String,
    },
    /// CP-APR fits counts: nonzero `index` (in the tensor's order) holds a negative value.
    #[error("CP-APR needs nonnegative counts, but nonzero {index} holds {value}")]
    NegativeValue { index: usize, value: f64 },
    /// CP-ALS met values it cannot continue from (non-finite normal equations or fit).
    #[error("CP-ALS: {0}")]
    CpdNumerical(String),
    #[error("kernel: {0}")]
    Kernel(#[from] alto_kernels::KernelError),
}

impl AltoError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        AltoError::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T> = std::result::Result<T, AltoError>;
