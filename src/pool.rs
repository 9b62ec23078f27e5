//! The thread pool every computing command runs on: built once per run with an explicit
//! thread count (never rayon's global pool), so a pinning policy can hook its start handler.

use crate::error::{AltoError, Result};

/// Builds a pool of `threads` workers named `alto-worker-{i}`.
pub fn build_pool(threads: usize) -> Result<rayon::ThreadPool> {
    if threads == 0 {
        return Err(AltoError::InvalidArgument(
            "--threads must be at least 1".into(),
        ));
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("alto-worker-{i}"))
        .build()
        .map_err(|e| AltoError::InvalidArgument(format!("cannot start {threads} threads: {e}")))
}
