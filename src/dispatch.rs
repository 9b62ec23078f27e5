//! Kernel selection: the best ISA this CPU has, the rank specialization for the requested rank,
//! and the decoder rule. Forcing either is an explicit option ([`DispatchOptions`]): the library
//! reads no environment; binaries read `ALTO_ISA` / `ALTO_DECODE` ([`ISA_ENV`], [`DECODE_ENV`])
//! and pass the values in.
//!
//! ISAs, best first: `avx512` (AVX-512F), `avx2` (AVX2 + FMA + BMI2), `pulp` (the `pulp` crate's
//! portable SIMD, which itself dispatches to AVX-512, AVX2 or scalar) and `scalar` (always
//! available). `pulp` and `scalar` are never picked over an available explicit kernel; they stay
//! callable by name for comparisons.

use crate::error::{AltoError, Result};
use alto_kernels::{default_decode_kind, Bmi2, CpuIdentity, DecodeKind, Isa, KernelId};

/// Environment variable the binaries read to force an ISA: `avx512`, `avx2`, `pulp` or
/// `scalar`. An unknown name, or an ISA this CPU lacks, is an error (never a silent fallback).
pub const ISA_ENV: &str = "ALTO_ISA";
/// Environment variable the binaries read to force the decoder (`pext` or `runs`).
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

/// The ISA named `name`: an error if unknown or not available on this CPU.
pub fn parse_isa(name: &str) -> Result<Isa> {
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

/// The decoder named `name` (`pext` or `runs`): an error if unknown, or `pext` without BMI2.
pub fn parse_decode(name: &str) -> Result<DecodeKind> {
    match name {
        "pext" if Bmi2::try_new().is_some() => Ok(DecodeKind::Pext),
        "pext" => Err(AltoError::InvalidArgument(
            "pext but this CPU has no BMI2".into(),
        )),
        "runs" => Ok(DecodeKind::Runs),
        other => Err(AltoError::InvalidArgument(format!(
            "unknown decoder `{other}` (pext or runs)"
        ))),
    }
}

/// The default decoder: [`default_decode_kind`] for this CPU.
pub fn default_decode() -> DecodeKind {
    default_decode_kind(CpuIdentity::detect())
}

/// What a caller forces over the defaults: an ISA for [`KernelChoice::Auto`] and a decoder for
/// MTTKRP options that name none. `Default`: nothing forced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DispatchOptions {
    /// Replaces the best ISA when the kernel is `auto`.
    pub isa: Option<Isa>,
    /// Replaces the CPU's decoder rule when the options name no decoder.
    pub decode: Option<DecodeKind>,
}

impl DispatchOptions {
    /// Parses the values a binary read from [`ISA_ENV`] and [`DECODE_ENV`] (`None` or empty:
    /// not forced); errors name the variable.
    pub fn from_values(isa: Option<&str>, decode: Option<&str>) -> Result<Self> {
        let named = |var: &str, e: AltoError| match e {
            AltoError::InvalidArgument(m) => AltoError::InvalidArgument(format!("{var}: {m}")),
            e => e,
        };
        let isa = match isa.filter(|s| !s.is_empty()) {
            Some(name) => Some(parse_isa(name).map_err(|e| named(ISA_ENV, e))?),
            None => None,
        };
        let decode = match decode.filter(|s| !s.is_empty()) {
            Some(name) => Some(parse_decode(name).map_err(|e| named(DECODE_ENV, e))?),
            None => None,
        };
        Ok(DispatchOptions { isa, decode })
    }

    /// The ISA `auto` means: the forced one, else [`best_isa`].
    pub fn isa(&self) -> Isa {
        self.isa.unwrap_or_else(best_isa)
    }

    /// The decoder to use when none is named: the forced one, else [`default_decode`].
    pub fn decode(&self) -> DecodeKind {
        self.decode.unwrap_or_else(default_decode)
    }

    /// `choice` with `auto` bound to the forced ISA, if one is (named kernels and ISAs stay).
    pub fn kernel(&self, choice: KernelChoice) -> KernelChoice {
        match (choice, self.isa) {
            (KernelChoice::Auto, Some(isa)) => KernelChoice::Isa(isa),
            (choice, _) => choice,
        }
    }
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
            KernelChoice::Auto => KernelId::best(best_isa(), rank),
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
    fn forced_values_parse_and_apply() {
        let none = DispatchOptions::from_values(None, Some("")).unwrap();
        assert_eq!(none, DispatchOptions::default());
        assert_eq!(none.isa(), best_isa());
        let forced = DispatchOptions::from_values(Some("scalar"), Some("runs")).unwrap();
        assert_eq!(forced.decode(), DecodeKind::Runs);
        assert_eq!(
            forced.kernel(KernelChoice::Auto),
            KernelChoice::Isa(Isa::Scalar)
        );
        assert_eq!(
            forced.kernel(KernelChoice::Isa(Isa::Pulp)),
            KernelChoice::Isa(Isa::Pulp)
        );
        let bad = DispatchOptions::from_values(Some("sse9"), None).unwrap_err();
        assert!(bad.to_string().contains("ALTO_ISA: unknown ISA"), "{bad}");
        let bad = DispatchOptions::from_values(None, Some("fast")).unwrap_err();
        assert!(
            bad.to_string().contains("ALTO_DECODE: unknown decoder"),
            "{bad}"
        );
    }

    #[test]
    fn kernel_names_parse_everywhere() {
        for name in [
            "avx512_r16",
            "atomic_avx2_rdyn",
            "pull_pulp_r16",
            "flagged_scalar_r64",
            "pull_avx512_tiled",
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
        assert_eq!(k.rank, RankSpec::Tiled);
        assert!(KernelChoice::parse("scalar_r16")
            .unwrap()
            .resolve(17)
            .is_err());
    }
}
