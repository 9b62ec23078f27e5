//! Capability tokens: holding a value of one of these types proves the running CPU executes the
//! instructions it names. They are built only by `try_new`, which asks the CPU once (the
//! standard library caches `cpuid`), so kernels that take a token need no further checks.
//!
//! - [`crate::Bmi2`] (in [`crate::decode`]): `pdep`/`pext`.
//! - [`Avx2Fma`]: x86-64-v3 level: AVX2, FMA, BMI1/BMI2, POPCNT, LZCNT.
//! - [`Avx512`]: AVX-512F on top of everything [`Avx2Fma`] needs.

/// Proof that the CPU has AVX2 and FMA (and BMI1/BMI2/POPCNT, which every AVX2 CPU has: the
/// AVX2 kernels enable BMI2 too so the `pext` decoder inlines into them).
#[derive(Clone, Copy, Debug)]
pub struct Avx2Fma {
    _private: (),
}

impl Avx2Fma {
    /// Returns the token when the CPU reports every feature the AVX2 kernels enable.
    pub fn try_new() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") && has!("bmi1") && has!("bmi2") && has!("popcnt") {
                return Some(Avx2Fma { _private: () });
            }
        }
        None
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
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") && Avx2Fma::try_new().is_some() {
                return Some(Avx512 { _private: () });
            }
        }
        None
    }

    /// The AVX2-level token every AVX-512 CPU also holds.
    pub fn avx2(self) -> Avx2Fma {
        Avx2Fma { _private: () }
    }
}
