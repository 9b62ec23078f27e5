//! Peak double-precision FLOP/s kernels: chains of FMAs on enough independent accumulators to
//! cover the FMA latency on every current x86 core (latency 4-5 cycles, 2 pipes: 8-10 in
//! flight), so throughput, not latency, limits them.
//!
//! Each kernel iterates `acc = acc * A + B` and returns the sum of its accumulators, which the
//! tests compare with the same recurrence computed plainly: the FMAs really ran.

use alto_kernels::probe::{chain_start as start, AVX512_CHAINS, NARROW_CHAINS};
pub use alto_kernels::probe::{FMA_A, FMA_B};
use alto_kernels::{Avx2Fma, Avx512, Fma, Scalar};

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
            PeakIsa::Scalar | PeakIsa::Avx2 => NARROW_CHAINS,
            PeakIsa::Avx512 => AVX512_CHAINS,
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

/// Runs the kernel of `isa` for `iters` iterations; `None` when the CPU lacks the ISA (the
/// kernels, in `alto_kernels::probe`, each take the token of the instructions they run).
pub fn run_fma(isa: PeakIsa, iters: u64) -> Option<f64> {
    use alto_kernels::probe::{fma_peak_avx2, fma_peak_avx512, fma_peak_scalar};
    Some(match isa {
        PeakIsa::Scalar => match Fma::try_new() {
            Some(fma) => fma_peak_scalar(fma, iters),
            None => mul_add_scalar(iters),
        },
        PeakIsa::Avx2 => fma_peak_avx2(Avx2Fma::try_new()?, iters),
        PeakIsa::Avx512 => fma_peak_avx512(Avx512::try_new()?, iters),
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

/// Without FMA a scalar multiply-add is two instructions (and two flops).
#[inline(never)]
fn mul_add_scalar(iters: u64) -> f64 {
    let mut acc: [f64; NARROW_CHAINS] = core::array::from_fn(start);
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = std::hint::black_box(*x * FMA_A) + FMA_B;
        }
    }
    acc.iter().sum()
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
        let header = format!("<alto_kernels::probe::{function}>:");
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
            ("fma_chains_scalar", "xmm"),
            ("fma_chains_avx2", "ymm"),
            ("fma_chains_avx512", "zmm"),
        ] {
            let body =
                disassembly_of(&dump, function).unwrap_or_else(|| panic!("{function} not found"));
            let fmas: Vec<&str> = body.lines().filter(|l| l.contains("vfmadd")).collect();
            assert!(fmas.len() >= 12, "{function}: {} FMAs\n{body}", fmas.len());
            assert!(
                fmas.iter().all(|l| l.contains(register)),
                "{function} must use {register}\n{body}"
            );
            if function == "fma_chains_scalar" {
                assert!(
                    fmas.iter().all(|l| l.contains("sd")),
                    "scalar FMAs are vfmadd...sd"
                );
            }
        }
    }
}
