//! Every kernel variant against a naive oracle: each ISA (one test module per ISA, made by
//! `isa_tests!`) x decoder (`pext`, `runs`) x sink (plain, plain in three windowed segments,
//! atomic, flag-guided) x index width (u32, u64, u128) x rank ([`RANKS`]: 1 to 129) x order
//! (2-6) x every target mode x kernel (the rank-specialized one, the tiled one and the
//! runtime-rank one) x prefetch distance.
//!
//! An ISA this CPU lacks is skipped with a message; with `EXPECT_AVX512=1` the AVX-512 tests
//! fail instead of skipping (the emulator run sets it). `ALTO_KERNEL_TESTS=emu` selects the
//! reduced grid for the AVX-512 emulator (~250x slower, one thread, no files): fewer nonzeros
//! and no software prefetch (the emulator hooks prefetch instructions for its system calls).
//! No threads and no files here, so the whole file runs under the emulator.

use alto_kernels::index::{pdep_soft_u128, pext_soft_u128};
use alto_kernels::{
    as_atomic, run_segment, AnyDecoder, AtomicRows, Bmi2, DecodeKind, FlaggedRows, Isa,
    KernelError, KernelId, KernelIndex, PlainRows, RankSpec, SegmentInput,
};

/// Every rank shape: one column, tails of every length, the specialized ranks, ranks between
/// them, and ranks over one full tile of eight vectors (100, 129) with tails.
const RANKS: [usize; 13] = [1, 7, 8, 9, 10, 16, 17, 20, 33, 50, 64, 100, 129];
const ORDERS: std::ops::RangeInclusive<usize> = 2..=6;

/// The reduced grid for the emulator.
fn emulated() -> bool {
    std::env::var("ALTO_KERNEL_TESTS").as_deref() == Ok("emu")
}

/// xorshift64*: deterministic test data without dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// One test tensor: masks, indices (with flag and junk bits outside the masks), values.
struct Case {
    dims: Vec<u64>,
    masks: Vec<u128>,
    idx: Vec<u128>,
    vals: Vec<f64>,
    /// A bit outside every mask, used as the boundary flag.
    flag: u128,
}

/// A tensor whose masks use bits spread over the whole `width`: for `u128` the first mode's
/// mask straddles bit 64 and some bits lie above 64; for `u64` some lie above 32.
fn make_case(order: usize, width: u32, nnz: usize, rng: &mut Rng) -> Case {
    let mut bits: Vec<u32> = (0..order).map(|_| 1 + rng.below(4) as u32).collect();
    if width == 128 {
        bits[0] = bits[0].max(2); // so mode 0 can take both bit 63 and bit 64
    }
    let dims: Vec<u64> = bits
        .iter()
        .map(|&b| (1u64 << (b - 1)) + 1 + rng.below(1u64 << (b - 1)))
        .collect();
    let total: u32 = bits.iter().sum();
    // Choose `total` distinct bit positions: forced high positions first, then random ones.
    let mut used = 0u128;
    let mut positions: Vec<u32> = Vec::new();
    let forced: &[u32] = match width {
        128 => &[63, 64, 100],
        64 => &[40],
        _ => &[],
    };
    for &p in forced.iter().take(total as usize) {
        used |= 1u128 << p;
        positions.push(p);
    }
    while positions.len() < total as usize {
        let p = rng.below(width as u64) as u32;
        if used & (1u128 << p) == 0 {
            used |= 1u128 << p;
            positions.push(p);
        }
    }
    // Mode 0 takes the first (forced) positions, so its mask straddles bit 64 for u128.
    let mut masks = vec![0u128; order];
    let mut k = 0;
    for (m, &b) in bits.iter().enumerate() {
        for _ in 0..b {
            masks[m] |= 1u128 << positions[k];
            k += 1;
        }
    }
    let free: Vec<u32> = (0..width).filter(|&p| used & (1u128 << p) == 0).collect();
    let flag = 1u128 << free[rng.below(free.len() as u64) as usize];
    let junk_bits: u128 = free.iter().fold(0u128, |j, &p| j | (1u128 << p)) & !flag;
    let mut idx = Vec::with_capacity(nnz);
    let mut vals = Vec::with_capacity(nnz);
    for _ in 0..nnz {
        let mut x = 0u128;
        for (m, &d) in dims.iter().enumerate() {
            // Skewed: half the coordinates come from the two lowest rows (row reuse).
            let c = if rng.below(2) == 0 {
                rng.below(d.min(2))
            } else {
                rng.below(d)
            };
            x |= pdep_soft_u128(c as u128, masks[m]);
        }
        if rng.below(2) == 0 {
            x |= flag;
        }
        x |= (rng.next() as u128 | ((rng.next() as u128) << 64)) & junk_bits;
        idx.push(x);
        vals.push(rng.unit());
    }
    Case {
        dims,
        masks,
        idx,
        vals,
        flag,
    }
}

/// The naive oracle: plain loops over decoded coordinates, never optimized. Returns the result
/// and, per entry, the sum of absolute terms and the number of terms (for the tolerance).
fn oracle(
    c: &Case,
    factors: &[Vec<f64>],
    target: usize,
    rank: usize,
) -> (Vec<f64>, Vec<f64>, Vec<usize>) {
    let rows = c.dims[target] as usize;
    let mut y = vec![0.0; rows * rank];
    let mut abs = vec![0.0; rows * rank];
    let mut terms = vec![0usize; rows];
    for (k, &x) in c.idx.iter().enumerate() {
        let coord: Vec<usize> = c
            .masks
            .iter()
            .map(|&m| pext_soft_u128(x, m) as usize)
            .collect();
        let i = coord[target];
        terms[i] += 1;
        for r in 0..rank {
            let mut prod = c.vals[k];
            for (m, u) in factors.iter().enumerate() {
                if m != target {
                    prod *= u[coord[m] * rank + r];
                }
            }
            y[i * rank + r] += prod;
            abs[i * rank + r] += prod.abs();
        }
    }
    (y, abs, terms)
}

/// How a kernel's output is collected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SinkKind {
    /// One `PlainRows` over the whole output.
    Plain,
    /// Three segments, each into its own `PlainRows` window `[lo, hi]` (first row `lo`), summed.
    PlainWindows,
    Atomic,
    Flagged,
}

const SINKS: [SinkKind; 4] = [
    SinkKind::Plain,
    SinkKind::PlainWindows,
    SinkKind::Atomic,
    SinkKind::Flagged,
];

/// Runs one kernel over the case through `sink`, returning the output.
#[allow(clippy::too_many_arguments)]
fn run<I: KernelIndex>(
    kernel: KernelId,
    dec: &AnyDecoder<I>,
    c: &Case,
    idx: &[I],
    factors: &[&[f64]],
    target: usize,
    rank: usize,
    sink: SinkKind,
    prefetch: usize,
) -> Result<Vec<f64>, KernelError> {
    let rows = c.dims[target] as usize;
    let mut out = vec![f64::NAN; rows * rank];
    let input = |range: std::ops::Range<usize>| SegmentInput {
        idx: &idx[range.clone()],
        vals: &c.vals[range],
        factors,
        target,
        rank,
        boundary_mask: I::from_u128(c.flag),
        prefetch,
    };
    let n = idx.len();
    match sink {
        SinkKind::Plain => {
            out.fill(0.0);
            run_segment(
                kernel,
                dec,
                &input(0..n),
                &mut PlainRows::new(&mut out, 0, rank),
            )?;
        }
        SinkKind::PlainWindows => {
            // Three segments of the nonzeros ordered by target row, so later windows start
            // above row 0 (their first row is subtracted by the sink).
            out.fill(0.0);
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&k| dec.coord(idx[k], target));
            let sorted_idx: Vec<I> = order.iter().map(|&k| idx[k]).collect();
            let sorted_vals: Vec<f64> = order.iter().map(|&k| c.vals[k]).collect();
            for p in 0..3 {
                let range = p * n / 3..(p + 1) * n / 3;
                if range.is_empty() {
                    continue;
                }
                let seg = &sorted_idx[range.clone()];
                let coords: Vec<u64> = seg.iter().map(|&x| dec.coord(x, target)).collect();
                let (lo, hi) = (*coords.iter().min().unwrap(), *coords.iter().max().unwrap());
                let mut buf = vec![0.0; (hi - lo + 1) as usize * rank];
                let input = SegmentInput {
                    idx: seg,
                    vals: &sorted_vals[range],
                    factors,
                    target,
                    rank,
                    boundary_mask: I::from_u128(c.flag),
                    prefetch,
                };
                run_segment(kernel, dec, &input, &mut PlainRows::new(&mut buf, lo, rank))?;
                for (o, b) in out[lo as usize * rank..].iter_mut().zip(&buf) {
                    *o += b;
                }
            }
        }
        SinkKind::Atomic => {
            out.fill(0.0);
            let cells = as_atomic(&mut out);
            run_segment(kernel, dec, &input(0..n), &mut AtomicRows::new(cells, rank))?;
        }
        SinkKind::Flagged => {
            out.fill(0.0);
            let cells = as_atomic(&mut out);
            // SAFETY: one segment runs alone, so every flag assignment is exact (no other
            // segment writes any row); random flags test both paths.
            let mut sink = unsafe { FlaggedRows::new(cells, rank) };
            run_segment(kernel, dec, &input(0..n), &mut sink)?;
        }
    }
    Ok(out)
}

/// The kernels to test for `rank` on `isa`: the tiled one, the runtime-rank one, and the
/// specialized one when the rank has one.
fn kernels(isa: Isa, rank: usize) -> Vec<KernelId> {
    let mut v: Vec<KernelId> = [RankSpec::Tiled, RankSpec::Dynamic]
        .into_iter()
        .map(|rank| KernelId { isa, rank })
        .collect();
    if let RankSpec::Fixed(r) = RankSpec::best_for(rank) {
        v.push(KernelId {
            isa,
            rank: RankSpec::Fixed(r),
        });
    }
    v
}

fn decoders() -> Vec<DecodeKind> {
    if Bmi2::try_new().is_some() {
        vec![DecodeKind::Pext, DecodeKind::Runs]
    } else {
        eprintln!("skipping the pext decoder: this CPU has no BMI2");
        vec![DecodeKind::Runs]
    }
}

/// Checks every variant of `isa` on one case and index width `I`; returns the runs checked.
fn check_case<I: KernelIndex>(isa: Isa, c: &Case, seed: u64) -> usize {
    let masks: Vec<I> = c.masks.iter().map(|&m| I::from_u128(m)).collect();
    let idx: Vec<I> = c.idx.iter().map(|&x| I::from_u128(x)).collect();
    let prefetches: &[usize] = if emulated() { &[0] } else { &[0, 3] };
    let mut rng = Rng(seed | 1);
    let mut checked = 0;
    for rank in RANKS {
        let factors: Vec<Vec<f64>> = c
            .dims
            .iter()
            .map(|&d| (0..d as usize * rank).map(|_| rng.unit()).collect())
            .collect();
        let fs: Vec<&[f64]> = factors.iter().map(|f| f.as_slice()).collect();
        for target in 0..c.dims.len() {
            let (want, abs, terms) = oracle(c, &factors, target, rank);
            for kind in decoders() {
                let dec = AnyDecoder::new(kind, &masks).expect("decoders() checked BMI2");
                for kernel in kernels(isa, rank) {
                    for sink in SINKS {
                        for &prefetch in prefetches {
                            let got = run(kernel, &dec, c, &idx, &fs, target, rank, sink, prefetch)
                                .unwrap_or_else(|e| panic!("{kernel}: {e}"));
                            for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
                                let row = e / rank;
                                let tol = 8.0
                                    * f64::EPSILON
                                    * (terms[row] + c.dims.len()) as f64
                                    * abs[e]
                                    + 1e-300;
                                assert!(
                                    (g - w).abs() <= tol,
                                    "{kernel} ({} decoder, {sink:?} sink, prefetch {prefetch}, \
                                     {} index, order {}, dims {:?}, rank {rank}, target {target}): \
                                     entry {e} is {g}, the oracle says {w}",
                                    kind.name(),
                                    I::NAME,
                                    c.dims.len(),
                                    c.dims
                                );
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    checked
}

/// The whole grid for one ISA.
fn check_isa(isa: Isa) {
    let nnz = if emulated() { 24 } else { 150 };
    let mut rng = Rng(0x5eed ^ isa as u64);
    let mut checked = 0;
    for order in ORDERS {
        for width in [32u32, 64, 128] {
            let c = make_case(order, width, nnz, &mut rng);
            let seed = rng.next();
            checked += match width {
                32 => check_case::<u32>(isa, &c, seed),
                64 => check_case::<u64>(isa, &c, seed),
                _ => check_case::<u128>(isa, &c, seed),
            };
        }
    }
    eprintln!("{}: {checked} kernel runs matched the oracle", isa.name());
}

/// True when the tests of `isa` should run; prints why not otherwise. With `EXPECT_AVX512=1`
/// a missing AVX-512 is a failure, never a skip.
fn require(isa: Isa) -> bool {
    if isa == Isa::Avx512 && std::env::var("EXPECT_AVX512").as_deref() == Ok("1") {
        assert!(
            isa.available(),
            "EXPECT_AVX512=1 but this CPU (or emulator) does not run the AVX-512 kernels"
        );
    }
    if !isa.available() {
        eprintln!(
            "skipping the {} kernel tests: this CPU lacks the ISA",
            isa.name()
        );
        return false;
    }
    true
}

/// Errors are typed and found before any memory is touched (except out-of-range coordinates).
fn check_errors(isa: Isa) {
    let mut rng = Rng(77);
    let c = make_case(3, 32, 20, &mut rng);
    let masks: Vec<u32> = c.masks.iter().map(|&m| m as u32).collect();
    let idx: Vec<u32> = c.idx.iter().map(|&x| x as u32).collect();
    let dec = AnyDecoder::new(DecodeKind::Runs, &masks).expect("runs is always available");
    let rank = 8;
    let factors: Vec<Vec<f64>> = c
        .dims
        .iter()
        .map(|&d| vec![1.0; d as usize * rank])
        .collect();
    let fs: Vec<&[f64]> = factors.iter().map(|f| f.as_slice()).collect();
    let kernel = KernelId {
        isa,
        rank: RankSpec::Fixed(8),
    };
    let base = SegmentInput {
        idx: &idx,
        vals: &c.vals,
        factors: &fs,
        target: 0,
        rank,
        boundary_mask: 0,
        prefetch: 0,
    };
    let mut out = vec![0.0; c.dims[0] as usize * rank];
    let mut go = |input: &SegmentInput<'_, u32>, kernel: KernelId| {
        run_segment(
            kernel,
            &dec,
            input,
            &mut PlainRows::new(&mut out, 0, input.rank),
        )
    };
    assert_eq!(go(&base, kernel), Ok(()));
    let wrong_rank = KernelId {
        isa,
        rank: RankSpec::Fixed(16),
    };
    assert_eq!(
        go(&base, wrong_rank),
        Err(KernelError::RankMismatch {
            kernel: wrong_rank,
            rank
        })
    );
    let short = SegmentInput {
        vals: &c.vals[1..],
        ..base
    };
    assert!(matches!(
        go(&short, kernel),
        Err(KernelError::LengthMismatch { .. })
    ));
    let few = SegmentInput {
        factors: &fs[..2],
        ..base
    };
    assert!(matches!(
        go(&few, kernel),
        Err(KernelError::FactorCount { .. })
    ));
    let bad_target = SegmentInput { target: 3, ..base };
    assert!(matches!(
        go(&bad_target, kernel),
        Err(KernelError::TargetOutOfRange { .. })
    ));
    // Output rows that miss a target row: reported by the explicit kernels before any write
    // (the portable tiers index the sink's slice and panic instead).
    let top = idx
        .iter()
        .map(|&x| pext_soft_u128(x as u128, c.masks[0]) as u64)
        .max()
        .unwrap();
    if matches!(isa, Isa::Avx2 | Isa::Avx512) {
        let mut short_out = vec![0.0; top as usize * rank];
        let mut sink = PlainRows::new(&mut short_out, 0, rank);
        assert_eq!(
            run_segment(kernel, &dec, &base, &mut sink),
            Err(KernelError::RowOutOfRange {
                row: top,
                first: 0,
                rows: top
            })
        );
    }
    // A factor one row short: the nonzero that needs the missing row is reported.
    let need = idx
        .iter()
        .map(|&x| pext_soft_u128(x as u128, c.masks[1]) as u64)
        .max()
        .unwrap();
    let cut = &factors[1][..need as usize * rank];
    let short_factor = [fs[0], cut, fs[2]];
    let input = SegmentInput {
        factors: &short_factor,
        ..base
    };
    assert_eq!(
        go(&input, kernel),
        Err(KernelError::CoordOutOfRange {
            mode: 1,
            coord: need,
            rows: need as usize
        })
    );
}

macro_rules! isa_tests {
    ($($name:ident => $isa:expr),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[test]
            fn every_variant_matches_the_oracle() {
                if require($isa) {
                    check_isa($isa);
                }
            }

            #[test]
            fn errors_are_typed() {
                if require($isa) {
                    check_errors($isa);
                }
            }
        }
    )*};
}

isa_tests! {
    scalar => Isa::Scalar,
    pulp => Isa::Pulp,
    avx2 => Isa::Avx2,
    avx512 => Isa::Avx512,
}

#[test]
fn names_round_trip_and_isas_are_ordered() {
    for k in KernelId::all() {
        assert_eq!(KernelId::parse(&k.to_string()), Some(k), "{k}");
    }
    let names: Vec<String> = KernelId::all().iter().map(|k| k.to_string()).collect();
    for expected in [
        "avx512_r16",
        "avx2_rdyn",
        "pulp_r16",
        "scalar_r64",
        "avx512_rdyn",
        "avx2_tiled",
        "scalar_tiled",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    assert_eq!(KernelId::parse("avx2_r12"), None);
    assert_eq!(KernelId::parse("sse_r16"), None);
    assert!(
        Isa::ALL.windows(2).all(|w| w[0] < w[1]),
        "Isa::ALL must go worst to best"
    );
    assert!(Isa::Scalar.available() && Isa::Pulp.available());
}
