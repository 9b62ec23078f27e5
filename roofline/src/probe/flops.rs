//! Peak double-precision FLOP/s kernels: chains of FMAs on enough independent accumulators to
//! cover the FMA latency on every current x86 core (latency 4-5 cycles, 2 pipes: 8-10 in
//! flight), so throughput, not latency, limits them.
//!
//! Each kernel iterates `acc = acc * A + B` and returns the sum of its accumulators, which the
//! tests compare with the same recurrence computed plainly: the FMAs really ran.

/// Multiplier and addend of the recurrence: `acc` converges to B / (1 - A) = 1 without
/// overflow. Accumulators start away from that fixed point (and from a value the compiler
/// cannot see), or the whole loop folds to a constant.
pub const FMA_A: f64 = 0.999_999;
pub const FMA_B: f64 = 1e-6;

use alto_kernels::{Avx2Fma, Avx512, Fma, Scalar};

/// Start value of accumulator `k`.
fn start(k: usize) -> f64 {
    std::hint::black_box(0.5) + k as f64 * 1e-3
}

/// The vector widths a peak can be measured at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeakIsa {
    /// One double per instruction: scalar FMA (or mul + add without FMA).
    Scalar,
    /// 4 doubles per instruction (ymm, AVX2 + FMA).
    Avx2,
    /// 8 doubles per instruction (zmm, AVX-512F).
    Avx512,
}

impl PeakIsa {
    pub fn name(self) -> &'static str {
        match self {
            PeakIsa::Scalar => "scalar",
            PeakIsa::Avx2 => "avx2",
            PeakIsa::Avx512 => "avx512",
        }
    }

    /// Whether this CPU runs the kernel: whether its `alto_kernels::isa` token can be built.
    pub fn available(self) -> bool {
        match self {
            PeakIsa::Scalar => Scalar::try_new().is_some(),
            PeakIsa::Avx2 => Avx2Fma::try_new().is_some(),
            PeakIsa::Avx512 => Avx512::try_new().is_some(),
        }
    }

    /// Accumulator chains the kernel keeps in flight.
    pub fn accumulators(self) -> usize {
        match self {
            PeakIsa::Scalar | PeakIsa::Avx2 => 12,
            PeakIsa::Avx512 => 16,
        }
    }

    pub fn lanes(self) -> usize {
        match self {
            PeakIsa::Scalar => 1,
            PeakIsa::Avx2 => 4,
            PeakIsa::Avx512 => 8,
        }
    }

    /// Flops one call of [`run_fma`] executes for `iters` iterations (an FMA counts 2).
    pub fn flops(self, iters: u64) -> f64 {
        iters as f64 * (self.accumulators() * self.lanes() * 2) as f64
    }
}

/// Runs the kernel of `isa` for `iters` iterations; `None` when the CPU lacks the ISA.
pub fn run_fma(isa: PeakIsa, iters: u64) -> Option<f64> {
    // SAFETY (each call): the token just built proves the CPU has the features the kernel
    // enables (`Fma`: fma; `Avx2Fma`: avx2 and fma; `Avx512`: avx512f).
    Some(match isa {
        PeakIsa::Scalar => match Fma::try_new() {
            Some(_fma) => unsafe { fma_scalar(iters) },
            None => mul_add_scalar(iters),
        },
        PeakIsa::Avx2 => {
            let _avx2 = Avx2Fma::try_new()?;
            unsafe { fma_avx2(iters) }
        }
        PeakIsa::Avx512 => {
            let _avx512 = Avx512::try_new()?;
            unsafe { fma_avx512(iters) }
        }
    })
}

/// The expected return value of every kernel: accumulators x lanes copies of the recurrence.
pub fn expected_sum(isa: PeakIsa, iters: u64) -> f64 {
    (0..isa.accumulators())
        .map(|k| {
            let mut acc = start(k);
            for _ in 0..iters {
                acc = acc.mul_add(FMA_A, FMA_B);
            }
            acc * isa.lanes() as f64
        })
        .sum()
}

#[inline(never)]
#[target_feature(enable = "fma")]
fn fma_scalar(iters: u64) -> f64 {
    use core::arch::x86_64::*;
    let a = _mm_set_sd(FMA_A);
    let b = _mm_set_sd(FMA_B);
    let mut acc: [__m128d; 12] = core::array::from_fn(|k| _mm_set_sd(start(k)));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm_fmadd_sd(*x, a, b);
        }
    }
    acc.iter().map(|x| _mm_cvtsd_f64(*x)).sum()
}

/// Without FMA a scalar multiply-add is two instructions (and two flops).
#[inline(never)]
fn mul_add_scalar(iters: u64) -> f64 {
    let mut acc: [f64; 12] = core::array::from_fn(start);
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = std::hint::black_box(*x * FMA_A) + FMA_B;
        }
    }
    acc.iter().sum()
}

#[inline(never)]
#[target_feature(enable = "avx2,fma")]
fn fma_avx2(iters: u64) -> f64 {
    use core::arch::x86_64::*;
    let a = _mm256_set1_pd(FMA_A);
    let b = _mm256_set1_pd(FMA_B);
    let mut acc: [__m256d; 12] = core::array::from_fn(|k| _mm256_set1_pd(start(k)));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm256_fmadd_pd(*x, a, b);
        }
    }
    let mut lanes = [0.0f64; 4];
    let mut total = 0.0;
    for x in acc {
        // SAFETY: `lanes` holds exactly 4 doubles, the width of one ymm store.
        unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), x) };
        total += lanes.iter().sum::<f64>();
    }
    total
}

#[inline(never)]
#[target_feature(enable = "avx512f")]
fn fma_avx512(iters: u64) -> f64 {
    use core::arch::x86_64::*;
    let a = _mm512_set1_pd(FMA_A);
    let b = _mm512_set1_pd(FMA_B);
    let mut acc: [__m512d; 16] = core::array::from_fn(|k| _mm512_set1_pd(start(k)));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm512_fmadd_pd(*x, a, b);
        }
    }
    acc.iter().map(|x| _mm512_reduce_add_pd(*x)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_compute_the_recurrence_they_claim() {
        for isa in [PeakIsa::Scalar, PeakIsa::Avx2, PeakIsa::Avx512] {
            match run_fma(isa, 10_000) {
                None => eprintln!("skipping {}: not available on this CPU", isa.name()),
                Some(got) => {
                    let want = expected_sum(isa, 10_000);
                    assert!(
                        (got - want).abs() <= 1e-9 * want,
                        "{}: {got} vs {want}",
                        isa.name()
                    );
                }
            }
        }
        assert_eq!(PeakIsa::Avx2.flops(10), 10.0 * 12.0 * 4.0 * 2.0);
    }

    /// The body of `function` in `objdump -d` output of this test binary.
    fn disassembly_of(dump: &str, function: &str) -> Option<String> {
        let header = format!("<alto_roofline::probe::flops::{function}>:");
        let start = dump.find(&header)?;
        let body = &dump[start..];
        let end = body.find("\n\n").unwrap_or(body.len());
        Some(body[..end].to_string())
    }

    #[test]
    fn disassembly_uses_the_intended_vector_width() {
        // Keep the kernels linked into this binary.
        let _ = run_fma(PeakIsa::Scalar, 1);
        let _ = run_fma(PeakIsa::Avx2, 1);
        let _ = run_fma(PeakIsa::Avx512, 1);
        let exe = std::env::current_exe().unwrap();
        let out = match std::process::Command::new("objdump")
            .args(["-d", "--no-show-raw-insn", "-C"])
            .arg(&exe)
            .output()
        {
            Ok(o) if o.status.success() => o,
            _ => {
                eprintln!("skipping: objdump is not available");
                return;
            }
        };
        let dump = String::from_utf8_lossy(&out.stdout);
        for (function, register) in [
            ("fma_scalar", "xmm"),
            ("fma_avx2", "ymm"),
            ("fma_avx512", "zmm"),
        ] {
            let body =
                disassembly_of(&dump, function).unwrap_or_else(|| panic!("{function} not found"));
            let fmas: Vec<&str> = body.lines().filter(|l| l.contains("vfmadd")).collect();
            assert!(fmas.len() >= 12, "{function}: {} FMAs\n{body}", fmas.len());
            assert!(
                fmas.iter().all(|l| l.contains(register)),
                "{function} must use {register}\n{body}"
            );
            if function == "fma_scalar" {
                assert!(
                    fmas.iter().all(|l| l.contains("sd")),
                    "scalar FMAs are vfmadd...sd"
                );
            }
        }
    }
}
