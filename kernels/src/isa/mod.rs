//! The one place in the workspace that asks the CPU what it is and what it can run.
//!
//! - Capability tokens: holding a value of one of these types proves the running CPU executes
//!   the instructions it names. Each has a private field and is built only by its `try_new`,
//!   which asks the CPU (the standard library caches `cpuid`), so kernels that take a token
//!   need no further checks and a safe function can reach intrinsics only with one in hand.
//!   - [`Scalar`]: the baseline target; always available (the one-lane tier's token).
//!   - [`Bmi2`]: `pdep`/`pext` (and POPCNT).
//!   - [`Fma`]: scalar and 128-bit fused multiply-add.
//!   - [`Avx2Fma`]: x86-64-v3 level: AVX2, FMA, BMI1/BMI2, POPCNT.
//!   - [`Avx512`]: AVX-512F on top of everything [`Avx2Fma`] needs.
//! - [`CpuIdentity`] ([`cpu`]): vendor, family, model, stepping, brand string and the
//!   kernel-relevant feature flags, from `cpuid`.

pub mod cpu;

pub use cpu::CpuIdentity;

/// Asks the CPU for one feature (false off x86-64).
macro_rules! has {
    ($($feature:tt),+) => {{
        #[cfg(target_arch = "x86_64")]
        let yes = $(std::arch::is_x86_feature_detected!($feature))&&+;
        #[cfg(not(target_arch = "x86_64"))]
        let yes = false;
        yes
    }};
}

/// The baseline target: no instruction beyond what every build assumes. Always available; it
/// exists so the one-lane tier is instantiated like the others, from a token.
#[derive(Clone, Copy, Debug)]
pub struct Scalar {
    _private: (),
}

impl Scalar {
    /// Always the token: the baseline target needs no detection.
    #[inline(always)]
    pub fn new() -> Self {
        Scalar { _private: () }
    }

    /// Always `Some`: the same constructor shape as the other tokens.
    pub fn try_new() -> Option<Self> {
        Some(Self::new())
    }
}

impl Default for Scalar {
    fn default() -> Self {
        Self::new()
    }
}

/// Proof that the running CPU executes BMI2 (`pdep`/`pext`) natively.
#[derive(Clone, Copy, Debug)]
pub struct Bmi2 {
    _private: (),
}

impl Bmi2 {
    /// Returns the token when the CPU reports BMI2 (and POPCNT, which every BMI2 CPU has).
    pub fn try_new() -> Option<Self> {
        has!("bmi2", "popcnt").then_some(Bmi2 { _private: () })
    }

    /// Runs `f` inside a function compiled with BMI2 enabled, so the `pdep`/`pext` intrinsics
    /// reached from `f` inline instead of being called (an intrinsic cannot inline into code
    /// compiled without its feature). For sequential loops outside the kernels, such as the
    /// format builder's encode and interval scans: put the loop in an `#[inline(always)]`
    /// function and call it from `f`.
    #[inline(always)]
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "bmi2,popcnt")]
            #[inline]
            fn with_bmi2<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            // SAFETY: holding `self` proves the CPU has BMI2 and POPCNT.
            unsafe { with_bmi2(f) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        f()
    }
}

/// A loop to compile with BMI2 enabled ([`Bmi2::run_body`]). Implementors mark `call`
/// `#[inline(always)]`: it is then compiled inside the BMI2 function whatever its size, where a
/// closure given to [`Bmi2::run`] is inlined there only while the inliner finds it small (a
/// large one stays a plain function and calls each `pext` out of line).
pub trait Bmi2Body {
    type Output;
    fn call(self) -> Self::Output;
}

impl Bmi2 {
    /// Runs `body` inside a function compiled with BMI2 enabled (see [`Bmi2Body`]).
    #[inline(always)]
    pub fn run_body<B: Bmi2Body>(self, body: B) -> B::Output {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "bmi2,popcnt")]
            #[inline]
            fn with_bmi2_body<B: Bmi2Body>(body: B) -> B::Output {
                body.call()
            }
            // SAFETY: holding `self` proves the CPU has BMI2 and POPCNT.
            unsafe { with_bmi2_body(body) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        body.call()
    }
}

/// Proof that the CPU has the FMA extension (scalar and 128/256-bit `vfmadd`).
#[derive(Clone, Copy, Debug)]
pub struct Fma {
    _private: (),
}

impl Fma {
    /// Returns the token when the CPU reports FMA.
    pub fn try_new() -> Option<Self> {
        has!("fma").then_some(Fma { _private: () })
    }
}

/// Proof that the CPU has AVX2 and FMA (and BMI1/BMI2/POPCNT, which every AVX2 CPU has: the
/// AVX2 kernels enable BMI2 too so the `pext` decoder inlines into them).
#[derive(Clone, Copy, Debug)]
pub struct Avx2Fma {
    _private: (),
}

impl Avx2Fma {
    /// Returns the token when the CPU reports every feature the AVX2 kernels enable.
    pub fn try_new() -> Option<Self> {
        has!("avx2", "fma", "bmi1", "bmi2", "popcnt").then_some(Avx2Fma { _private: () })
    }

    /// The FMA token every AVX2+FMA CPU also holds.
    #[inline(always)]
    pub fn fma(self) -> Fma {
        Fma { _private: () }
    }

    /// The BMI2 token every CPU this token accepts also holds.
    #[inline(always)]
    pub fn bmi2(self) -> Bmi2 {
        Bmi2 { _private: () }
    }

    /// Runs `f` inside a function compiled with every feature this token proves, so plain
    /// loops reached from `f` vectorize with AVX2 (the baseline x86-64 target has no unsigned
    /// 32-bit min or max in vector registers, so such a loop stays scalar there). As with
    /// [`Bmi2::run`], put the loop in an `#[inline(always)]` function and call it from `f`.
    #[inline(always)]
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2,fma,bmi1,bmi2,popcnt")]
            #[inline]
            fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            // SAFETY: holding `self` proves the CPU has every feature enabled above.
            unsafe { with_avx2(f) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        f()
    }
}

/// Proof that the CPU has AVX-512F (512-bit `zmm` registers, opmask loads and stores) as well as
/// everything [`Avx2Fma`] proves.
#[derive(Clone, Copy, Debug)]
pub struct Avx512 {
    _private: (),
}

impl Avx512 {
    /// Returns the token when the CPU reports AVX-512F and the AVX2-level features.
    pub fn try_new() -> Option<Self> {
        (has!("avx512f") && Avx2Fma::try_new().is_some()).then_some(Avx512 { _private: () })
    }

    /// The AVX2-level token every AVX-512 CPU also holds.
    #[inline(always)]
    pub fn avx2(self) -> Avx2Fma {
        Avx2Fma { _private: () }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_nest() {
        assert!(Scalar::try_new().is_some());
        if let Some(t) = Avx512::try_new() {
            assert!(Avx2Fma::try_new().is_some());
            let _ = t.avx2();
        }
        if Avx2Fma::try_new().is_some() {
            assert!(Fma::try_new().is_some() && Bmi2::try_new().is_some());
        }
        let cpu = CpuIdentity::detect();
        assert_eq!(cpu.has_bmi2, Bmi2::try_new().is_some());
        assert_eq!(cpu.has_avx2 && cpu.has_fma, Avx2Fma::try_new().is_some());
    }
}
