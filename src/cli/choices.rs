//! Typed values of the kernel and strategy options (`--sync`, `--kernel`, `--decode`, `--mode`,
//! `--row-kernel`): clap checks the spelling, names the option on a bad value (usage error,
//! exit 2) and lists the choices in `--help`; what depends on the tensor or the CPU (a mode
//! past the order, a kernel this CPU lacks) is still checked when the command runs.

use alto::dispatch::KernelChoice;
use alto::mttkrp::{ConflictResolution, SyncChoice};
use alto_kernels::DecodeKind;
use clap::ValueEnum;

/// `--sync`: conflict resolution of every MTTKRP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SyncArg {
    /// The heuristic, per mode.
    Auto,
    /// Private staging buffers, then a pull-based reduction.
    Pull,
    /// Atomic adds on the shared output.
    Atomic,
    /// Atomic adds only for boundary nonzeros (falls back to atomic without a flag bit).
    Flagged,
}

impl From<SyncArg> for SyncChoice {
    fn from(a: SyncArg) -> SyncChoice {
        match a {
            SyncArg::Auto => SyncChoice::Auto,
            SyncArg::Pull => SyncChoice::Force(ConflictResolution::Pull),
            SyncArg::Atomic => SyncChoice::Force(ConflictResolution::Atomic),
            SyncArg::Flagged => SyncChoice::Force(ConflictResolution::Flagged),
        }
    }
}

/// `--pad`: rows padded to whole vectors (see `alto::mttkrp::padding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PadArg {
    /// Where the rank needs it and the copies pay (automatic or ISA kernel choice).
    Auto,
    /// Whenever the rank needs it.
    On,
    /// Never: the kernels run on the caller's rows.
    Off,
}

impl PadArg {
    /// The option's value in `MttkrpOptions::pad`.
    pub fn choice(self) -> Option<bool> {
        match self {
            PadArg::Auto => None,
            PadArg::On => Some(true),
            PadArg::Off => Some(false),
        }
    }
}

/// `--decode`: de-linearization of the ALTO index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DecodeArg {
    /// The CPU rule.
    Auto,
    /// BMI2 `pext` (the CPU must have BMI2).
    Pext,
    /// Shift-and-mask over bit runs, on any CPU.
    Runs,
}

impl DecodeArg {
    /// The forced decoder, `None` for `auto`. Fails on `pext` without BMI2.
    pub fn kind(self) -> anyhow::Result<Option<DecodeKind>> {
        Ok(match self {
            DecodeArg::Auto => None,
            DecodeArg::Pext => {
                if alto_kernels::Bmi2::try_new().is_none() {
                    anyhow::bail!("--decode pext: this CPU has no BMI2");
                }
                Some(DecodeKind::Pext)
            }
            DecodeArg::Runs => Some(DecodeKind::Runs),
        })
    }
}

/// What `--kernel` accepts, for `--help`.
pub const KERNEL_HELP: &str = "MTTKRP kernel: `auto`, an ISA (scalar, pulp, avx2, avx512: its \
best variant for the rank), or a kernel name `<isa>_r<R>` / `<isa>_rdyn` such as `avx512_r16` \
or `scalar_rdyn`, optionally with the strategy prefix printed in reports (`pull_scalar_r16`)";

/// `--kernel`: the spelling is checked here; whether this CPU has the ISA and the kernel runs
/// the rank is checked when the command runs.
pub fn parse_kernel(s: &str) -> Result<KernelChoice, String> {
    KernelChoice::parse(s).map_err(|e| e.to_string())
}

/// `alto cpd --model`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelArg {
    /// Least squares: CP-ALS.
    Als,
    /// Poisson (counts): CP-APR, multiplicative updates.
    Apr,
}

/// `alto cpd --kernel`: an MTTKRP kernel (CP-ALS, or CP-APR's Phi on the MTTKRP kernels), or a
/// Phi kernel (`phi_...`, `fused`, `cached`; CP-APR only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpdKernel {
    Mttkrp(KernelChoice),
    Phi(alto::cpd::apr::PhiKind),
}

/// What `alto cpd --kernel` accepts, for `--help`.
pub const CPD_KERNEL_HELP: &str = "MTTKRP kernel: `auto`, an ISA (scalar, pulp, avx2, avx512: its \
best variant for the rank), or a kernel name `<isa>_r<R>` / `<isa>_rdyn` such as `avx512_r16` \
(optionally with the strategy prefix printed in reports, `pull_scalar_r16`). With --model apr, \
the Phi kernel: `auto` (phi_cached when the factors exceed 32 MiB and the cache fits in 4 GiB, \
else phi_fused), `phi_fused` (one portable pass), `phi_cached` (Pi cached per nonzero), or `phi_<mttkrp kernel>` (weights, then that MTTKRP kernel), e.g. \
`phi_pull_avx512_r16`";

pub fn parse_cpd_kernel(s: &str) -> Result<CpdKernel, String> {
    if s.starts_with("phi_") || s == "fused" || s == "cached" {
        alto::cpd::apr::PhiKind::parse(s)
            .map(CpdKernel::Phi)
            .map_err(|e| e.to_string())
    } else {
        KernelChoice::parse(s)
            .map(CpdKernel::Mttkrp)
            .map_err(|e| e.to_string())
    }
}

/// `--mode`: every mode, or one (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeArg {
    All,
    One(usize),
}

pub fn parse_mode(s: &str) -> Result<ModeArg, String> {
    if s == "all" {
        return Ok(ModeArg::All);
    }
    s.parse()
        .map(ModeArg::One)
        .map_err(|_| format!("`{s}` is not a mode number or `all`"))
}

/// What `--row-kernel` accepts, for `--help`.
pub const ROW_KERNEL_HELP: &str = "Kernel of the solve / Gram / scaling passes: `auto`, an ISA \
(portable, avx2fma: its best variant for the rank) or a name `<isa>_r<R>` / `<isa>_rdyn` such \
as `avx2fma_r16` or `portable_rdyn`";

/// The ISAs of the row kernels, as spelled on the command line.
const ROW_ISAS: [&str; 2] = ["portable", "avx2fma"];

/// `--row-kernel`: checks the spelling (`auto`, `<isa>`, `<isa>_r<R>`, `<isa>_rdyn`) and keeps
/// it; whether the variant exists for the rank and the CPU is checked when the command runs,
/// where the rank is known.
pub fn parse_row_kernel(s: &str) -> Result<String, String> {
    let (isa, variant) = match s.rsplit_once('_') {
        Some((i, v)) => (i, Some(v)),
        None => (s, None),
    };
    let variant_ok = match variant {
        None => true,
        Some(v) => {
            v == "rdyn"
                || v.strip_prefix('r')
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        }
    };
    if s == "auto" || (ROW_ISAS.contains(&isa) && variant_ok) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown row kernel `{s}` (auto, portable, avx2fma, or <isa>_r<R> / <isa>_rdyn)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_parse_as_before() {
        assert_eq!(parse_mode("all"), Ok(ModeArg::All));
        assert_eq!(parse_mode("2"), Ok(ModeArg::One(2)));
        assert!(parse_mode("-1").is_err() && parse_mode("x").is_err());
        assert_eq!(parse_kernel("auto"), Ok(KernelChoice::Auto));
        assert!(parse_kernel("pull_scalar_r16").is_ok());
        assert!(parse_kernel("sse9_r16").is_err());
        for ok in [
            "auto",
            "portable",
            "avx2fma",
            "portable_rdyn",
            "avx2fma_r16",
        ] {
            assert_eq!(parse_row_kernel(ok).as_deref(), Ok(ok));
        }
        for bad in ["neon", "portable_x", "portable_r", "avx2fma_r1x"] {
            assert!(parse_row_kernel(bad).is_err(), "{bad}");
        }
        assert_eq!(
            SyncChoice::from(SyncArg::Flagged),
            "flagged".parse::<SyncChoice>().unwrap()
        );
    }
}
