//! The `pulp` tier: the MTTKRP segment written once over `pulp::Simd` with safe slices
//! (`as_simd_f64s` splits a row into vectors and a scalar tail), dispatched by `pulp::Arch` to
//! V4 (AVX-512), V3 (AVX2 + FMA + BMI2) or scalar. It is the portable comparison point for the
//! hand-written kernels: same algorithm, no `unsafe`, the library picks the instructions.
//! Both V3 and V4 enable BMI2, so the `pext` decoder inlines here too.

use super::{out_of_range, KernelError, Others, RankSpec, SegmentInput};
use crate::decode::{Decode, HwBits, ModeDecode, MAX_ORDER};
use crate::sink::RowSink;
use pulp::{Arch, Simd, WithSimd};

/// Columns per pass: every fixed rank fits in one pass.
const CHUNK: usize = 64;

/// One segment as a `pulp` operation; `R` is the fixed rank, or 0 for the runtime rank.
struct Segment<'s, 'a, I, D, S, const R: usize> {
    input: &'s SegmentInput<'a, I>,
    dec: &'s D,
    sink: &'s mut S,
}

impl<I: HwBits, D: Decode<I>, S: RowSink, const R: usize> WithSimd for Segment<'_, '_, I, D, S, R> {
    type Output = Result<(), KernelError>;

    #[inline(always)]
    fn with_simd<V: Simd>(self, simd: V) -> Self::Output {
        let Segment { input, dec, sink } = self;
        let rank = if R == 0 { input.rank } else { R };
        let others = Others::new(input, dec, rank);
        let n = others.count::<0>();
        let last = n - 1; // order >= 2 (checked by run_segment)
        let mut rows: [&[f64]; MAX_ORDER] = [&[]; MAX_ORDER];
        let mut buf = [0.0f64; CHUNK];
        for (k, (&x, &v)) in input.idx.iter().zip(input.vals).enumerate() {
            if input.prefetch > 0 {
                if let Some(&ahead) = input.idx.get(k + input.prefetch) {
                    others.prefetch::<I, 0>(ahead, rank);
                }
            }
            let modes = others.dec[..n]
                .iter()
                .zip(&others.rows[..n])
                .zip(&others.factor[..n]);
            for (row, ((d, &count), factor)) in rows[..n].iter_mut().zip(modes) {
                let c = d.coord(x);
                if c >= count {
                    return Err(out_of_range(input, dec, x));
                }
                let c = c as usize;
                *row = &factor[c * rank..(c + 1) * rank];
            }
            let target = others.target.coord(x);
            let boundary = x.intersects(input.boundary_mask);
            let (heads, tail) = rows.split_at(last);
            let lrow = tail[0];
            match sink.plain_row(target, boundary) {
                Some(out) => {
                    let out = &mut out[..rank];
                    for col in (0..rank).step_by(CHUNK) {
                        let w = CHUNK.min(rank - col);
                        let acc = &mut buf[..w];
                        product(simd, v, heads, col, acc);
                        fma_into(simd, acc, &lrow[col..col + w], &mut out[col..col + w]);
                    }
                }
                None => {
                    for col in (0..rank).step_by(CHUNK) {
                        let w = CHUNK.min(rank - col);
                        let acc = &mut buf[..w];
                        product(simd, v, heads, col, acc);
                        mul_into(simd, acc, &lrow[col..col + w]);
                        sink.add(target, col, acc, boundary);
                    }
                }
            }
        }
        Ok(())
    }
}

/// `acc = v * prod_r r[col .. col + acc.len()]`.
#[inline(always)]
fn product<V: Simd>(simd: V, v: f64, rows: &[&[f64]], col: usize, acc: &mut [f64]) {
    let w = acc.len();
    let (ah, at) = V::as_mut_simd_f64s(acc);
    let splat = simd.splat_f64s(v);
    ah.fill(splat);
    at.fill(v);
    for row in rows {
        let (rh, rt) = V::as_simd_f64s(&row[col..col + w]);
        for (a, r) in ah.iter_mut().zip(rh) {
            *a = simd.mul_f64s(*a, *r);
        }
        for (a, r) in at.iter_mut().zip(rt) {
            *a *= r;
        }
    }
}

/// `out += acc * last` (`mul_add_e`: fused where the ISA has FMA, `a * b + c` otherwise).
#[inline(always)]
fn fma_into<V: Simd>(simd: V, acc: &[f64], last: &[f64], out: &mut [f64]) {
    let (oh, ot) = V::as_mut_simd_f64s(out);
    let (ah, at) = V::as_simd_f64s(acc);
    let (lh, lt) = V::as_simd_f64s(last);
    for ((o, a), l) in oh.iter_mut().zip(ah).zip(lh) {
        *o = simd.mul_add_e_f64s(*a, *l, *o);
    }
    for ((o, a), l) in ot.iter_mut().zip(at).zip(lt) {
        *o += a * l;
    }
}

/// `acc *= last`.
#[inline(always)]
fn mul_into<V: Simd>(simd: V, acc: &mut [f64], last: &[f64]) {
    let (ah, at) = V::as_mut_simd_f64s(acc);
    let (lh, lt) = V::as_simd_f64s(last);
    for (a, l) in ah.iter_mut().zip(lh) {
        *a = simd.mul_f64s(*a, *l);
    }
    for (a, l) in at.iter_mut().zip(lt) {
        *a *= l;
    }
}

/// Runs the rank variant `spec` (checked against the input's rank by `run_segment`) on the best
/// `pulp` architecture of this CPU.
pub(super) fn run<I: HwBits, D: Decode<I>, S: RowSink>(
    spec: RankSpec,
    dec: &D,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    let arch = Arch::new();
    match spec {
        RankSpec::Fixed(8) => arch.dispatch(Segment::<_, _, _, 8> { input, dec, sink }),
        RankSpec::Fixed(16) => arch.dispatch(Segment::<_, _, _, 16> { input, dec, sink }),
        RankSpec::Fixed(32) => arch.dispatch(Segment::<_, _, _, 32> { input, dec, sink }),
        RankSpec::Fixed(64) => arch.dispatch(Segment::<_, _, _, 64> { input, dec, sink }),
        RankSpec::Fixed(_) | RankSpec::Dynamic => {
            arch.dispatch(Segment::<_, _, _, 0> { input, dec, sink })
        }
    }
}
