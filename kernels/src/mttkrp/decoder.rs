//! Decoder choice: [`AnyDecoder`] (BMI2 `pext` or bit runs, picked at run time),
//! [`DecodeKind`] (its name) and the default rule [`default_decode_kind`].

use crate::decode::{Bmi2, Decode, HwBits, PextDecoder, RunsDecoder};
use crate::isa::CpuIdentity;

/// A decoder chosen at run time.
#[derive(Clone, Debug)]
pub enum AnyDecoder<I> {
    Pext(PextDecoder<I>),
    Runs(RunsDecoder<I>),
}

/// Which de-linearization to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecodeKind {
    /// BMI2 `pext`.
    Pext,
    /// Shift-and-mask over bit runs.
    Runs,
}

impl DecodeKind {
    pub fn name(self) -> &'static str {
        match self {
            DecodeKind::Pext => "pext",
            DecodeKind::Runs => "runs",
        }
    }
}

/// The default decoder rule: BMI2 `pext` where the CPU has it natively fast; the bit-run
/// decoder otherwise. AMD before Zen 3 (family 0x17: Zen 1, Zen+, Zen 2, and older) runs
/// `pext` in microcode (hundreds of cycles), so those take the software path.
pub fn default_decode_kind(cpu: CpuIdentity) -> DecodeKind {
    let slow_pext = cpu.amd && cpu.family <= 0x17;
    if cpu.has_bmi2 && !slow_pext {
        DecodeKind::Pext
    } else {
        DecodeKind::Runs
    }
}

impl<I: HwBits> AnyDecoder<I> {
    /// Builds the decoder of `kind`; `None` when `Pext` is asked for on a CPU without BMI2.
    pub fn new(kind: DecodeKind, masks: &[I]) -> Option<Self> {
        match kind {
            DecodeKind::Pext => Some(AnyDecoder::Pext(PextDecoder::new(Bmi2::try_new()?, masks))),
            DecodeKind::Runs => Some(AnyDecoder::Runs(RunsDecoder::new(masks))),
        }
    }

    pub fn kind(&self) -> DecodeKind {
        match self {
            AnyDecoder::Pext(_) => DecodeKind::Pext,
            AnyDecoder::Runs(_) => DecodeKind::Runs,
        }
    }

    pub fn order(&self) -> usize {
        match self {
            AnyDecoder::Pext(d) => d.order(),
            AnyDecoder::Runs(d) => d.order(),
        }
    }

    #[inline(always)]
    pub fn coord(&self, idx: I, mode: usize) -> u64 {
        match self {
            AnyDecoder::Pext(d) => d.coord(idx, mode),
            AnyDecoder::Runs(d) => d.coord(idx, mode),
        }
    }
}
