//! Kernel selection, resolved once: the best ISA this CPU has (or the one `ALTO_ISA` forces),
//! the rank specialization for the requested rank, and the decoder rule.
//!
//! ISAs, best first: `avx512` (AVX-512F), `avx2` (AVX2 + FMA + BMI2), `pulp` (the `pulp` crate's
//! portable SIMD, which itself dispatches to AVX-512, AVX2 or scalar) and `scalar` (always
//! available). `pulp` and `scalar` are never picked over an available explicit kernel; they stay
//! callable by name for comparisons.

use crate::error::{AltoError, Result};
use alto_kernels::{default_decode_kind, CpuIdentity, DecodeKind, Isa, KernelId};
use std::sync::OnceLock;

/// Environment variable that forces an ISA: `avx512`, `avx2`, `pulp` or `scalar`. An unknown
/// name, or an ISA this CPU lacks, is an error (never a silent fallback).
pub const ISA_ENV: &str = "ALTO_ISA";
/// Environment variable that forces the decoder (`pext` or `runs`).
pub const DECODE_ENV: &str = "ALTO_DECODE";

/// The best ISA available on this CPU: the last available entry of [`Isa::ALL`], which is
/// ordered worst to best (avx512 > avx2 > pulp > scalar).
pub fn best_isa() -> Isa {
    Isa::ALL
        .into_iter()
        .rev()
        .find(|isa| isa.available())
        .unwrap_or(Isa::Scalar)
}

fn parse_isa(name: &str) -> Result<Isa> {
    let isa = Isa::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Isa::ALL.iter().map(|i| i.name()).collect();
        AltoError::InvalidArgument(format!(
            "unknown ISA `{name}` (known: {})",
            known.join(", ")
        ))
    })?;
    if !isa.available() {
        return Err(AltoError::InvalidArgument(format!(
            "ISA `{name}` is not available on this CPU"
        )));
    }
    Ok(isa)
}

/// The default ISA: `ALTO_ISA` when set (an error if unknown or unavailable), else the best.
/// Resolved once per process.
pub fn default_isa() -> Result<Isa> {
    static ISA: OnceLock<std::result::Result<Isa, String>> = OnceLock::new();
    ISA.get_or_init(|| match std::env::var(ISA_ENV) {
        Ok(name) if !name.is_empty() => parse_isa(&name).map_err(|e| format!("{ISA_ENV}: {e}")),
        _ => Ok(best_isa()),
    })
    .clone()
    .map_err(AltoError::InvalidArgument)
}

/// The default decoder: `ALTO_DECODE` when set, else [`default_decode_kind`] for this CPU.
pub fn default_decode() -> Result<DecodeKind> {
    static DEC: OnceLock<std::result::Result<DecodeKind, String>> = OnceLock::new();
    DEC.get_or_init(|| {
        let cpu = CpuIdentity::detect();
        match std::env::var(DECODE_ENV).as_deref() {
            Ok("pext") if cpu.has_bmi2 => Ok(DecodeKind::Pext),
            Ok("pext") => Err(format!("{DECODE_ENV}=pext but this CPU has no BMI2")),
            Ok("runs") => Ok(DecodeKind::Runs),
            Ok("") | Err(_) => Ok(default_decode_kind(cpu)),
            Ok(other) => Err(format!(
                "{DECODE_ENV}: unknown decoder `{other}` (pext or runs)"
            )),
        }
    })
    .clone()
    .map_err(AltoError::InvalidArgument)
}

/// A kernel named on the command line: `auto`, an ISA (`avx2`: its best rank variant for the
/// rank), or a full kernel name (`avx512_r16`, `avx2_rdyn`, `pulp_r16`, `scalar_rdyn`; a strategy
/// prefix such as `pull_` is accepted and ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KernelChoice {
    #[default]
    Auto,
    Isa(Isa),
    Named(KernelId),
}

impl KernelChoice {
    pub fn parse(s: &str) -> Result<Self> {
        if s == "auto" {
            return Ok(KernelChoice::Auto);
        }
        if let Some(isa) = Isa::from_name(s) {
            return Ok(KernelChoice::Isa(isa));
        }
        // Accept a strategy prefix too (`pull_scalar_r16`), as printed in reports.
        let bare = ["pull_", "atomic_", "flagged_"]
            .iter()
            .find_map(|p| s.strip_prefix(p))
            .unwrap_or(s);
        KernelId::parse(bare)
            .map(KernelChoice::Named)
            .ok_or_else(|| {
                let names: Vec<String> = KernelId::all().iter().map(|k| k.to_string()).collect();
                AltoError::InvalidArgument(format!(
                    "unknown kernel `{s}` (auto, an ISA, or one of: {})",
                    names.join(", ")
                ))
            })
    }

    /// The kernel to run for `rank`.
    pub fn resolve(self, rank: usize) -> Result<KernelId> {
        let k = match self {
            KernelChoice::Auto => KernelId::best(default_isa()?, rank),
            KernelChoice::Isa(isa) => KernelId::best(isa, rank),
            KernelChoice::Named(k) => k,
        };
        if !k.isa.available() {
            return Err(AltoError::InvalidArgument(format!(
                "kernel {k} needs ISA {}, which this CPU lacks",
                k.isa.name()
            )));
        }
        if !k.rank.supports(rank) {
            return Err(AltoError::InvalidArgument(format!(
                "kernel {k} cannot run rank {rank}"
            )));
        }
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alto_kernels::RankSpec;

    #[test]
    fn best_isa_is_the_best_available() {
        let best = best_isa();
        assert!(best.available());
        assert!(Isa::ALL
            .iter()
            .filter(|i| i.available())
            .all(|&i| i <= best));
        for isa in Isa::ALL {
            match parse_isa(isa.name()) {
                Ok(parsed) => assert!(parsed == isa && isa.available()),
                Err(e) => {
                    assert!(!isa.available());
                    assert!(e.to_string().contains("not available"), "{e}");
                }
            }
        }
        let unknown = parse_isa("sse9").unwrap_err().to_string();
        assert!(
            unknown.contains("known: scalar, pulp, avx2, avx512"),
            "{unknown}"
        );
    }

    #[test]
    fn kernel_names_parse_everywhere() {
        for name in [
            "avx512_r16",
            "atomic_avx2_rdyn",
            "pull_pulp_r16",
            "flagged_scalar_r64",
        ] {
            let KernelChoice::Named(k) = KernelChoice::parse(name).unwrap() else {
                panic!("{name} is a full kernel name");
            };
            assert!(name.ends_with(&k.to_string()));
        }
        assert_eq!(
            KernelChoice::parse("avx2").unwrap(),
            KernelChoice::Isa(Isa::Avx2)
        );
        assert!(KernelChoice::parse("avx2_r12").is_err());
        let k = KernelChoice::Isa(Isa::Scalar).resolve(17).unwrap();
        assert_eq!(k.rank, RankSpec::Dynamic);
        assert!(KernelChoice::parse("scalar_r16")
            .unwrap()
            .resolve(17)
            .is_err());
    }
}
