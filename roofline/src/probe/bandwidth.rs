//! Bandwidth kernels in the likwid-bench / ERT manner: `load` (a sum over one array), `copy`
//! (`a = b`) and `triad` (`a = b + s * c`), swept repeatedly over a per-thread working set
//! sized to sit in one level of the memory hierarchy.
//!
//! Bytes counted are the bytes the kernel names: 8 per element for load, 16 for copy, 24 for
//! triad. Write-allocate traffic (reading the destination line before writing it, 8 more bytes
//! per written element) is NOT counted, as in STREAM.

use alto_kernels::Avx2Fma;

use std::sync::Barrier;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BwKernel {
    Load,
    Copy,
    Triad,
}

impl BwKernel {
    pub const ALL: [BwKernel; 3] = [BwKernel::Load, BwKernel::Copy, BwKernel::Triad];
    pub fn name(self) -> &'static str {
        match self {
            BwKernel::Load => "load",
            BwKernel::Copy => "copy",
            BwKernel::Triad => "triad",
        }
    }
    /// Arrays the kernel touches.
    pub fn arrays(self) -> usize {
        match self {
            BwKernel::Load => 1,
            BwKernel::Copy => 2,
            BwKernel::Triad => 3,
        }
    }
    /// Bytes counted per element index (no write-allocate).
    pub fn bytes_per_element(self) -> usize {
        8 * self.arrays()
    }
}

/// One thread's arrays for a kernel; `elements` per array.
pub struct Arrays {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Arrays {
    /// Allocates and first-touches the arrays (call on the thread that will use them).
    pub fn new(kernel: BwKernel, elements: usize) -> Self {
        let n = |k: usize| if kernel.arrays() > k { elements } else { 0 };
        Arrays {
            a: (0..n(0)).map(|i| (i % 7) as f64).collect(),
            b: (0..n(1)).map(|i| (i % 5) as f64).collect(),
            c: (0..n(2)).map(|i| (i % 3) as f64).collect(),
        }
    }

    /// One sweep; returns a value that depends on every element touched (kept by the caller so
    /// the work cannot be optimized away).
    pub fn sweep(&mut self, kernel: BwKernel) -> f64 {
        match kernel {
            BwKernel::Load => load(&self.a),
            BwKernel::Copy => {
                self.b.copy_from_slice(&self.a);
                self.b[self.b.len() / 2]
            }
            BwKernel::Triad => {
                triad(&mut self.a, &self.b, &self.c, 0.5);
                self.a[self.a.len() / 3]
            }
        }
    }
}

/// Sum of `x`; explicit AVX2 with 4 independent accumulators where available.
pub fn load(x: &[f64]) -> f64 {
    if let Some(avx2) = Avx2Fma::try_new() {
        alto_kernels::probe::sum_avx2(avx2, x)
    } else {
        let mut acc = [0.0f64; 8];
        let chunks = x.chunks_exact(8);
        let tail: f64 = chunks.remainder().iter().sum();
        for c in chunks {
            for (a, v) in acc.iter_mut().zip(c) {
                *a += v;
            }
        }
        acc.iter().sum::<f64>() + tail
    }
}

/// `a = b + s * c`, vectorized by the compiler for the best ISA present.
pub fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    match Avx2Fma::try_new() {
        Some(avx2) => alto_kernels::probe::triad_avx2(avx2, a, b, c, s),
        None => alto_kernels::probe::triad_portable(a, b, c, s),
    }
}

/// One measurement: every pool thread sweeps its own arrays `sweeps` times after a common
/// start; bandwidth = all counted bytes / the slowest thread's time.
pub fn measure(
    pool: &rayon::ThreadPool,
    kernel: BwKernel,
    elements_per_thread: usize,
    sweeps: usize,
    repetitions: usize,
) -> f64 {
    let threads = pool.current_num_threads();
    let barrier = Barrier::new(threads);
    let per_thread: Vec<f64> = pool.broadcast(|_| {
        let mut arrays = Arrays::new(kernel, elements_per_thread);
        let mut sink = arrays.sweep(kernel); // warm the level
        let mut best = f64::INFINITY;
        for _ in 0..repetitions {
            barrier.wait();
            let start = Instant::now();
            for _ in 0..sweeps {
                sink += arrays.sweep(kernel);
            }
            best = best.min(start.elapsed().as_secs_f64());
        }
        std::hint::black_box(sink);
        best
    });
    let slowest = per_thread.iter().copied().fold(0.0, f64::max);
    let bytes = (threads * elements_per_thread * kernel.bytes_per_element() * sweeps) as f64;
    bytes / slowest
}

/// Sweeps needed for one timed run of about `target_s` seconds, from a single timed sweep.
pub fn calibrate_sweeps(kernel: BwKernel, elements: usize, target_s: f64) -> usize {
    let mut arrays = Arrays::new(kernel, elements);
    let mut sink = arrays.sweep(kernel);
    let start = Instant::now();
    let mut n = 0usize;
    while start.elapsed().as_secs_f64() < target_s / 10.0 || n < 2 {
        sink += arrays.sweep(kernel);
        n += 1;
    }
    std::hint::black_box(sink);
    let per = start.elapsed().as_secs_f64() / n as f64;
    ((target_s / per).ceil() as usize).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_touch_every_byte_they_count() {
        // load: the sum proves every element was read.
        let x: Vec<f64> = (0..1003).map(|i| i as f64).collect();
        assert_eq!(load(&x), (1002.0 * 1003.0) / 2.0);
        // copy and triad: every destination element holds the computed value.
        let mut arr = Arrays::new(BwKernel::Copy, 777);
        arr.sweep(BwKernel::Copy);
        assert_eq!(arr.a, arr.b);
        let mut arr = Arrays::new(BwKernel::Triad, 999);
        arr.sweep(BwKernel::Triad);
        for i in 0..999 {
            assert_eq!(arr.a[i], (i % 5) as f64 + 0.5 * (i % 3) as f64);
        }
        assert_eq!(BwKernel::Triad.bytes_per_element(), 24);
    }

    #[test]
    fn measurement_counts_bytes_over_time() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let bw = measure(&pool, BwKernel::Load, 4096, 10, 2);
        assert!(bw.is_finite() && bw > 1e8, "{bw}"); // well above 100 MB/s from L1
    }
}
