//! The portable tier: plain safe Rust, no ISA-specific code beyond BMI2 for decoding. The
//! compiler may auto-vectorize the column loop for the baseline target only.

use super::{out_of_range, KernelError, Others, RankSpec, SegmentInput};
use crate::decode::{Decode, HwBits, ModeDecode, PextDecoder, RunsDecoder, MAX_ORDER};
use crate::sink::RowSink;

/// The generic body: `CHUNK` columns at a time; with `rank == CHUNK` a compile-time constant
/// (the specialized entry points) the column loop is fully unrolled.
#[inline(always)]
pub fn segment_body<I, D, S, const CHUNK: usize>(
    input: &SegmentInput<'_, I>,
    rank: usize,
    decoder: &D,
    sink: &mut S,
) -> Result<(), KernelError>
where
    I: HwBits,
    D: Decode<I>,
    S: RowSink,
{
    let others = Others::new(input, decoder, rank);
    let n = others.count::<0>();
    let mut coords = [0usize; MAX_ORDER];
    for (&x, &v) in input.idx.iter().zip(input.vals) {
        for ((coord, d), &rows) in coords[..n]
            .iter_mut()
            .zip(&others.dec[..n])
            .zip(&others.rows[..n])
        {
            let c = d.coord(x);
            if c >= rows {
                return Err(out_of_range(input, decoder, x));
            }
            *coord = c as usize;
        }
        let target = others.target.coord(x);
        let boundary = x.intersects(input.boundary_mask);
        let mut col0 = 0;
        while col0 < rank {
            let width = CHUNK.min(rank - col0);
            let mut row = [v; CHUNK];
            for (&coord, factor) in coords[..n].iter().zip(&others.factor[..n]) {
                let start = coord * rank + col0;
                let factor_row = &factor[start..start + width];
                for (acc, &u) in row[..width].iter_mut().zip(factor_row) {
                    *acc *= u;
                }
            }
            sink.add(target, col0, &row[..width], boundary);
            col0 += CHUNK;
        }
    }
    Ok(())
}

/// Instantiates the body for every rank specialization under one decoder.
macro_rules! rank_dispatch {
    ($spec:expr, $input:expr, $dec:expr, $sink:expr) => {
        match $spec {
            RankSpec::Fixed(8) => segment_body::<_, _, _, 8>($input, 8, $dec, $sink),
            RankSpec::Fixed(16) => segment_body::<_, _, _, 16>($input, 16, $dec, $sink),
            RankSpec::Fixed(32) => segment_body::<_, _, _, 32>($input, 32, $dec, $sink),
            RankSpec::Fixed(64) => segment_body::<_, _, _, 64>($input, 64, $dec, $sink),
            RankSpec::Fixed(_) | RankSpec::Dynamic => {
                segment_body::<_, _, _, 16>($input, $input.rank, $dec, $sink)
            }
        }
    };
}

pub(super) fn run_runs<I: HwBits, S: RowSink>(
    spec: RankSpec,
    dec: &RunsDecoder<I>,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    rank_dispatch!(spec, input, dec, sink)
}

pub(super) fn run_pext<I: HwBits, S: RowSink>(
    spec: RankSpec,
    dec: &PextDecoder<I>,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    // SAFETY: a PextDecoder can only be built with a Bmi2 token, so the CPU has BMI2.
    unsafe { scalar_pext_bmi2(spec, dec, input, sink) }
}

// Thin entry point: `bmi2` lets `pext` inline into the loop; the body stays generic.
#[target_feature(enable = "bmi2,popcnt")]
fn scalar_pext_bmi2<I: HwBits, S: RowSink>(
    spec: RankSpec,
    dec: &PextDecoder<I>,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    rank_dispatch!(spec, input, dec, sink)
}
