//! `#[target_feature]` entry points of the evaluation baselines (COO, CSF, HiCOO in
//! `alto-experiments`). The baseline kernels are written once, generic over the ISA, as
//! [`BaselineKernel`] bodies marked `#[inline(always)]`; [`Vectorize::vectorize`] runs a body
//! inside an entry point compiled for one instruction set, as pulp's `Simd::vectorize` does.
//! The bodies stay with their formats (they read the formats' arrays); only the thin entry
//! points live here, so the kernels crate remains the one place with `#[target_feature]`.
//!
//! An entry point is reached only through a capability token ([`Avx2Fma`], [`Avx512`]) or
//! [`Portable`], which enables nothing: a safe caller cannot run vector instructions the CPU
//! lacks. [`BaselineIsa`] is the run-time choice, holding the token it needs.

use crate::isa::{Avx2Fma, Avx512};

/// A kernel body generic over the instruction set it runs under. Implementations mark `run`
/// `#[inline(always)]`, so the body is compiled inside the entry point with its features.
pub trait BaselineKernel {
    type Output;
    /// The body; `isa` is the token it runs under, to pass on to nested
    /// [`Vectorize::vectorize`] calls (a recursion cannot be inlined, so each step re-enters an
    /// entry point of the same ISA).
    fn run<I: Vectorize>(self, isa: I) -> Self::Output;
}

/// An instruction set a [`BaselineKernel`] can be compiled for.
pub trait Vectorize: Copy + Send + Sync {
    /// Runs `kernel` inside an entry point compiled for this instruction set.
    fn vectorize<K: BaselineKernel>(self, kernel: K) -> K::Output;
}

/// The compilation target's baseline (SSE2 on x86-64): enables nothing, so anyone may hold it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Portable;

impl Vectorize for Portable {
    #[inline]
    fn vectorize<K: BaselineKernel>(self, kernel: K) -> K::Output {
        kernel.run(self)
    }
}

impl Vectorize for Avx2Fma {
    #[inline]
    fn vectorize<K: BaselineKernel>(self, kernel: K) -> K::Output {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: an `Avx2Fma` exists only when the CPU reported AVX2 and FMA.
            unsafe { avx2_entry(self, kernel) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            kernel.run(self)
        }
    }
}

impl Vectorize for Avx512 {
    #[inline]
    fn vectorize<K: BaselineKernel>(self, kernel: K) -> K::Output {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: an `Avx512` exists only when the CPU reported AVX-512F, AVX2 and FMA.
            unsafe { avx512_entry(self, kernel) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            kernel.run(self)
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn avx2_entry<K: BaselineKernel>(token: Avx2Fma, kernel: K) -> K::Output {
    kernel.run(token)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
fn avx512_entry<K: BaselineKernel>(token: Avx512, kernel: K) -> K::Output {
    kernel.run(token)
}

/// The instruction set the baselines run with, chosen at run time. The vector variant holds its
/// token, so a value of this type is proof that the CPU can run it.
#[derive(Clone, Copy, Debug)]
pub enum BaselineIsa {
    /// The compilation target's baseline.
    Portable,
    /// AVX2 and FMA, as a C baseline compiled with `-march=native` on an AVX2 machine.
    Avx2(Avx2Fma),
    /// AVX-512F (with AVX2 and FMA), as a C baseline compiled with `-march=native` on an
    /// AVX-512 machine: the same vector width ALTO's `avx512` kernels use.
    Avx512(Avx512),
}

impl BaselineIsa {
    /// Every ISA name, in [`BaselineIsa::name`] spelling.
    pub const NAMES: [&'static str; 3] = ["portable", "avx2", "avx512"];

    pub fn name(self) -> &'static str {
        match self {
            BaselineIsa::Portable => "portable",
            BaselineIsa::Avx2(_) => "avx2",
            BaselineIsa::Avx512(_) => "avx512",
        }
    }

    /// The ISA called `name` when the CPU runs it; `Err` says why not.
    pub fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "portable" => Ok(BaselineIsa::Portable),
            "avx2" => Avx2Fma::try_new()
                .map(BaselineIsa::Avx2)
                .ok_or_else(|| "ISA `avx2` is not available on this CPU".to_string()),
            "avx512" => Avx512::try_new()
                .map(BaselineIsa::Avx512)
                .ok_or_else(|| "ISA `avx512` is not available on this CPU".to_string()),
            _ => Err(format!("unknown ISA `{name}` (portable, avx2 or avx512)")),
        }
    }

    /// Every ISA this CPU runs, narrowest first.
    pub fn available() -> Vec<Self> {
        let mut v = vec![BaselineIsa::Portable];
        v.extend(Avx2Fma::try_new().map(BaselineIsa::Avx2));
        v.extend(Avx512::try_new().map(BaselineIsa::Avx512));
        v
    }

    /// The widest available.
    pub fn best() -> Self {
        *Self::available()
            .last()
            .expect("`available` always holds `Portable`")
    }

    /// Runs `kernel` compiled for this ISA.
    #[inline]
    pub fn dispatch<K: BaselineKernel>(self, kernel: K) -> K::Output {
        match self {
            BaselineIsa::Portable => Portable.vectorize(kernel),
            BaselineIsa::Avx2(token) => token.vectorize(kernel),
            BaselineIsa::Avx512(token) => token.vectorize(kernel),
        }
    }
}

impl PartialEq for BaselineIsa {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for BaselineIsa {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dot product, recursing through `vectorize` as the CSF kernel does.
    struct Dot<'a>(&'a [f64], &'a [f64]);

    impl BaselineKernel for Dot<'_> {
        type Output = f64;
        #[inline(always)]
        fn run<I: Vectorize>(self, isa: I) -> f64 {
            match self.0.len() {
                0 => 0.0,
                _ => self.0[0] * self.1[0] + isa.vectorize(Dot(&self.0[1..], &self.1[1..])),
            }
        }
    }

    #[test]
    fn every_token_runs_the_same_body() {
        let a: Vec<f64> = (0..37).map(|i| i as f64).collect();
        let want: f64 = a.iter().map(|x| x * x).sum();
        assert_eq!(Portable.vectorize(Dot(&a, &a)), want);
        for isa in BaselineIsa::available() {
            assert_eq!(isa.dispatch(Dot(&a, &a)), want, "{}", isa.name());
            assert_eq!(BaselineIsa::from_name(isa.name()), Ok(isa));
        }
        match Avx512::try_new() {
            Some(t) => {
                assert_eq!(t.vectorize(Dot(&a, &a)), want);
                assert_eq!(BaselineIsa::best().name(), "avx512");
            }
            None => {
                eprintln!("skipping the AVX-512 entry point: this CPU lacks AVX-512F");
                assert!(BaselineIsa::from_name("avx512").is_err());
            }
        }
        assert!(BaselineIsa::from_name("sse9").is_err());
    }
}
