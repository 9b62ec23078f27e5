//! Microbenchmarks of the ALTO kernels (divan): `cargo bench -p alto-kernels [-- FILTER]`.
//!
//! - `decode`: de-linearizing every mode of every nonzero, per decoder (`pext`, `runs`) and index
//!   width; the throughput column is nonzeros per second (ns per nonzero = 1e9 / it).
//! - `rank`: each rank kernel per ISA and rank on L1-resident factors, nonzeros in random order
//!   (so the rank arithmetic, not memory, is timed), as a ladder from `scalar` to `avx512` with and without rank
//!   specialization.
//! - `segment_mode{0,1,2}`: a full single-mode segment MTTKRP (one segment, plain output rows)
//!   on a skewed 3-D 2000 x 1500 x 1000 stand-in with 2M nonzeros sorted by ALTO index, as a
//!   ladder: scalar -> pulp -> avx2 -> avx2 rank-specialized -> + prefetch -> avx512 -> ...
//!
//! Ladder steps are numbered so divan lists them in ladder order; the rest of a step's name is
//! the kernel name (`avx512_r16`), with `_pf<N>` for a prefetch distance and `_runs` for the
//! software decoder. Every kernel's output is compared with the scalar kernel's before it is
//! timed, so a wrong kernel cannot post a time; an ISA this CPU lacks is skipped with a note.

use alto_kernels::index::pdep_soft_u128;
use alto_kernels::{
    run_segment, AnyDecoder, Bmi2, Decode, DecodeKind, HwBits, Isa, KernelId, KernelIndex,
    PlainRows, RankSpec, SegmentInput,
};
use divan::counter::ItemsCount;
use divan::{black_box, Bencher};
use std::sync::LazyLock;

fn main() {
    divan::main();
}

// ---------------------------------------------------------------------------------------------
// Stand-in data

/// splitmix64: small, fast, deterministic.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Log-normal with unit median and coefficient of variation `cv` (Box-Muller).
    fn lognormal(&mut self, cv: f64) -> f64 {
        let sigma = (1.0 + cv * cv).ln().sqrt();
        let (u1, u2) = (self.uniform().max(1e-300), self.uniform());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        (sigma * z).exp()
    }
}

/// Cumulative log-normal popularity over `n` ids (hot ids at random positions).
fn popularity(n: u64, cv: f64, rng: &mut Rng) -> Vec<f64> {
    let mut acc = 0.0;
    (0..n)
        .map(|_| {
            acc += rng.lognormal(cv);
            acc
        })
        .collect()
}

fn draw(cum: &[f64], rng: &mut Rng) -> u64 {
    let x = rng.uniform() * cum[cum.len() - 1];
    cum.partition_point(|&c| c <= x).min(cum.len() - 1) as u64
}

/// The ALTO masks of SPEC section 2 (bit levels upward, shortest modes first in a level).
fn alto_masks(dims: &[u64]) -> Vec<u128> {
    let bits: Vec<u32> = dims
        .iter()
        .map(|&d| {
            if d <= 1 {
                0
            } else {
                64 - (d - 1).leading_zeros()
            }
        })
        .collect();
    let mut order: Vec<usize> = (0..dims.len()).collect();
    order.sort_by_key(|&m| bits[m]);
    let mut masks = vec![0u128; dims.len()];
    let mut next = 0;
    for level in 0..bits.iter().copied().max().unwrap_or(0) {
        for &m in &order {
            if bits[m] > level {
                masks[m] |= 1u128 << next;
                next += 1;
            }
        }
    }
    masks
}

/// Coordinates in COO form.
struct Coo {
    dims: Vec<u64>,
    coords: Vec<Vec<u64>>,
    vals: Vec<f64>,
}

/// Hierarchical skew: slices and fibers with log-normal popularity, fiber lengths log-normal.
fn skewed(dims: &[u64], nnz: usize, seed: u64) -> Coo {
    let mut rng = Rng(seed);
    let pop: Vec<Vec<f64>> = dims.iter().map(|&d| popularity(d, 1.0, &mut rng)).collect();
    let mut coords: Vec<Vec<u64>> = vec![Vec::with_capacity(nnz); dims.len()];
    let mut vals = Vec::with_capacity(nnz);
    while vals.len() < nnz {
        let (s, f) = (draw(&pop[0], &mut rng), draw(&pop[1], &mut rng));
        let len = (rng.lognormal(1.0) * 4.0).ceil() as usize;
        for _ in 0..len.min(nnz - vals.len()) {
            coords[0].push(s);
            coords[1].push(f);
            for (m, c) in coords.iter_mut().enumerate().skip(2) {
                c.push(draw(&pop[m], &mut rng));
            }
            vals.push(rng.uniform());
        }
    }
    Coo {
        dims: dims.to_vec(),
        coords,
        vals,
    }
}

fn uniform(dims: &[u64], nnz: usize, seed: u64) -> Coo {
    let mut rng = Rng(seed);
    let coords = dims
        .iter()
        .map(|&d| (0..nnz).map(|_| rng.below(d)).collect())
        .collect();
    let vals = (0..nnz).map(|_| rng.uniform()).collect();
    Coo {
        dims: dims.to_vec(),
        coords,
        vals,
    }
}

/// An ALTO-ordered tensor of index word `I`; masks are shifted left by `shift` bits so wider
/// words really carry their bits high (a `u128` index straddles the 64-bit halves).
struct Alto<I> {
    masks: Vec<I>,
    idx: Vec<I>,
    vals: Vec<f64>,
}

fn linearize<I: HwBits>(coo: &Coo, shift: u32) -> Alto<I> {
    linearize_with(coo, shift, true)
}

/// [`linearize`], optionally in input order with duplicates kept (kernels care about neither).
fn linearize_with<I: HwBits>(coo: &Coo, shift: u32, sort: bool) -> Alto<I> {
    let masks128: Vec<u128> = alto_masks(&coo.dims).iter().map(|m| m << shift).collect();
    let mut pairs: Vec<(I, f64)> = (0..coo.vals.len())
        .map(|k| {
            let x = masks128.iter().enumerate().fold(0u128, |x, (m, &mask)| {
                x | pdep_soft_u128(coo.coords[m][k] as u128, mask)
            });
            (I::from_u128(x), coo.vals[k])
        })
        .collect();
    if sort {
        pairs.sort_unstable_by_key(|p| p.0);
    }
    let mut idx: Vec<I> = Vec::with_capacity(pairs.len());
    let mut vals: Vec<f64> = Vec::with_capacity(pairs.len());
    for (x, v) in pairs {
        if sort && idx.last() == Some(&x) {
            *vals.last_mut().expect("same length") += v;
        } else {
            idx.push(x);
            vals.push(v);
        }
    }
    Alto {
        masks: masks128.iter().map(|&m| I::from_u128(m)).collect(),
        idx,
        vals,
    }
}

/// A 64-byte aligned f64 buffer (factor rows of rank 8k then never straddle cache lines).
struct Aligned {
    buf: Vec<f64>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize, align: bool) -> Self {
        let buf = vec![0.0; len + 8];
        let start = if align {
            buf.as_ptr().align_offset(64)
        } else {
            0
        };
        Aligned { buf, start, len }
    }
    fn as_slice(&self) -> &[f64] {
        &self.buf[self.start..self.start + self.len]
    }
    fn as_mut_slice(&mut self) -> &mut [f64] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

fn factors(dims: &[u64], rank: usize, seed: u64) -> Vec<Aligned> {
    let align = std::env::var_os("BENCH_UNALIGNED").is_none();
    let mut rng = Rng(seed);
    dims.iter()
        .map(|&d| {
            let mut a = Aligned::new(d as usize * rank, align);
            a.as_mut_slice()
                .iter_mut()
                .for_each(|x| *x = rng.uniform() + 0.5);
            a
        })
        .collect()
}

const DIMS_3D: [u64; 3] = [2000, 1500, 1000];
const NNZ_3D: usize = 2_000_000;

static COO_3D: LazyLock<Coo> = LazyLock::new(|| skewed(&DIMS_3D, NNZ_3D, 2021));
static ALTO_3D: LazyLock<Alto<u32>> = LazyLock::new(|| linearize(&COO_3D, 0));
static FACTORS_3D: LazyLock<Vec<Aligned>> = LazyLock::new(|| factors(&DIMS_3D, 16, 7));

// ---------------------------------------------------------------------------------------------
// Running one kernel

/// A ladder step: `"3_avx2_r16_pf16"` -> kernel `avx2_r16`, prefetch 16, pext decoder.
struct Step {
    kernel: KernelId,
    prefetch: usize,
    decode: DecodeKind,
}

fn parse_step(step: &str, rank: usize) -> Step {
    let mut name = step
        .split_once('_')
        .map_or(step, |(_, rest)| rest)
        .to_string();
    let mut decode = DecodeKind::Pext;
    if let Some(rest) = name.strip_suffix("_runs") {
        decode = DecodeKind::Runs;
        name = rest.to_string();
    }
    let mut prefetch = 0;
    if let Some((rest, pf)) = name.rsplit_once("_pf") {
        prefetch = pf.parse().expect("a prefetch distance");
        name = rest.to_string();
    }
    let kernel = if let Some(isa) = Isa::from_name(&name) {
        KernelId::best(isa, rank)
    } else {
        KernelId::parse(&name).unwrap_or_else(|| panic!("unknown kernel in step {step}"))
    };
    Step {
        kernel,
        prefetch,
        decode,
    }
}

/// Why a step cannot run here, if it cannot.
fn unavailable(step: &Step) -> Option<String> {
    if !step.kernel.isa.available() {
        return Some(format!(
            "ISA {} is not available on this CPU",
            step.kernel.isa.name()
        ));
    }
    if step.decode == DecodeKind::Pext && Bmi2::try_new().is_none() {
        return Some("this CPU has no BMI2 for the pext decoder".into());
    }
    None
}

/// One segment MTTKRP of `target` into `out` (zeroed first).
#[allow(clippy::too_many_arguments)]
fn mttkrp<I: KernelIndex>(
    kernel: KernelId,
    dec: &AnyDecoder<I>,
    t: &Alto<I>,
    factors: &[&[f64]],
    target: usize,
    rank: usize,
    prefetch: usize,
    out: &mut [f64],
) {
    out.fill(0.0);
    let input = SegmentInput {
        idx: &t.idx,
        vals: &t.vals,
        factors,
        target,
        rank,
        boundary_mask: I::ZERO,
        prefetch,
    };
    let mut sink = PlainRows::new(out, 0, rank);
    run_segment(kernel, dec, &input, &mut sink).expect("validated inputs");
}

/// Asserts `got` matches the scalar kernel's `want` to a relative 1e-12.
fn check(step: &str, got: &[f64], want: &[f64]) {
    let scale = want.iter().fold(0.0f64, |a, x| a.max(x.abs())).max(1e-300);
    let worst = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        worst <= 1e-12 * scale,
        "{step}: differs from the scalar kernel by {worst}"
    );
}

// ---------------------------------------------------------------------------------------------
// decode

#[divan::bench(types = [u32, u64, u128], args = ["pext", "runs"])]
fn decode<I: HwBits>(bencher: Bencher, kind: &str) {
    let shift = match I::BITS {
        32 => 0,
        64 => 16,
        _ => 48, // bits 48..80: every mode straddles the two 64-bit halves
    };
    let t: Alto<I> = linearize(&COO_3D, shift);
    let kind = if kind == "pext" {
        DecodeKind::Pext
    } else {
        DecodeKind::Runs
    };
    let Some(dec) = AnyDecoder::new(kind, &t.masks) else {
        eprintln!("skipping decode {}: this CPU has no BMI2", kind.name());
        return;
    };
    for &x in t.idx.iter().step_by(997) {
        for (m, &mask) in t.masks.iter().enumerate() {
            assert_eq!(
                dec.coord(x, m),
                x.pext_soft(mask),
                "decoder disagrees with pext_soft"
            );
        }
    }
    match &dec {
        AnyDecoder::Pext(d) => bench_decode(bencher, d, &t.idx),
        AnyDecoder::Runs(d) => bench_decode(bencher, d, &t.idx),
    }
}

fn bench_decode<I: HwBits, D: Decode<I>>(bencher: Bencher, dec: &D, idx: &[I]) {
    let order = dec.order();
    bencher.counter(ItemsCount::new(idx.len())).bench_local(|| {
        let mut sum = 0u64;
        for &x in black_box(idx) {
            for m in 0..order {
                sum = sum.wrapping_add(dec.coord(x, m));
            }
        }
        sum
    });
}

// ---------------------------------------------------------------------------------------------
// rank kernels (L1-resident factors)

const RANK_LADDER: [&str; 6] = [
    "0_scalar",
    "1_pulp",
    "2_avx2_rdyn",
    "3_avx2",
    "4_avx512_rdyn",
    "5_avx512",
];

#[divan::bench(consts = [8, 16, 32, 64], args = RANK_LADDER, sample_count = 30)]
fn rank<const R: usize>(bencher: Bencher, step: &str) {
    static SMALL: LazyLock<Alto<u32>> =
        LazyLock::new(|| linearize_with(&uniform(&[16, 16, 16], 200_000, 5), 0, false));
    let t = &*SMALL;
    let s = parse_step(step, R);
    if let Some(why) = unavailable(&s) {
        eprintln!("skipping rank {step}: {why}");
        return;
    }
    let f = factors(&[16, 16, 16], R, 3);
    let fs: Vec<&[f64]> = f.iter().map(|v| v.as_slice()).collect();
    let dec = AnyDecoder::new(s.decode, &t.masks).expect("checked above");
    let mut want = vec![0.0; 16 * R];
    let scalar = KernelId {
        isa: Isa::Scalar,
        rank: RankSpec::Dynamic,
    };
    mttkrp(scalar, &dec, t, &fs, 0, R, 0, &mut want);
    let mut out = vec![0.0; 16 * R];
    mttkrp(s.kernel, &dec, t, &fs, 0, R, s.prefetch, &mut out);
    check(step, &out, &want);
    bencher
        .counter(ItemsCount::new(t.idx.len()))
        .bench_local(|| {
            mttkrp(s.kernel, &dec, t, &fs, 0, R, s.prefetch, &mut out);
        });
}

// ---------------------------------------------------------------------------------------------
// full single-mode segment MTTKRP on the 3-D stand-in

const SEGMENT_LADDER: [&str; 10] = [
    "0_scalar_r16",
    "1_pulp_r16",
    "2_avx2_rdyn",
    "3_avx2_r16",
    "4_avx2_r16_pf8",
    "5_avx2_r16_runs",
    "6_avx512_rdyn",
    "7_avx512_r16",
    "8_avx512_r16_pf8",
    "9_avx512_r16_runs",
];

fn segment(bencher: Bencher, step: &str, target: usize) {
    let (t, f) = (&*ALTO_3D, &*FACTORS_3D);
    let rank = 16;
    let s = parse_step(step, rank);
    if let Some(why) = unavailable(&s) {
        eprintln!("skipping segment {step}: {why}");
        return;
    }
    let fs: Vec<&[f64]> = f.iter().map(|v| v.as_slice()).collect();
    let dec = AnyDecoder::new(s.decode, &t.masks).expect("checked above");
    let rows = DIMS_3D[target] as usize;
    let mut want = vec![0.0; rows * rank];
    let scalar = KernelId {
        isa: Isa::Scalar,
        rank: RankSpec::Fixed(16),
    };
    mttkrp(scalar, &dec, t, &fs, target, rank, 0, &mut want);
    let mut out = Aligned::new(rows * rank, std::env::var_os("BENCH_UNALIGNED").is_none());
    mttkrp(
        s.kernel,
        &dec,
        t,
        &fs,
        target,
        rank,
        s.prefetch,
        out.as_mut_slice(),
    );
    check(step, out.as_slice(), &want);
    bencher
        .counter(ItemsCount::new(t.idx.len()))
        .bench_local(|| {
            mttkrp(
                s.kernel,
                &dec,
                t,
                &fs,
                target,
                rank,
                s.prefetch,
                out.as_mut_slice(),
            );
        });
}

#[divan::bench(args = SEGMENT_LADDER, sample_count = 20)]
fn segment_mode0(bencher: Bencher, step: &str) {
    segment(bencher, step, 0);
}

#[divan::bench(args = SEGMENT_LADDER, sample_count = 20)]
fn segment_mode1(bencher: Bencher, step: &str) {
    segment(bencher, step, 1);
}

#[divan::bench(args = SEGMENT_LADDER, sample_count = 20)]
fn segment_mode2(bencher: Bencher, step: &str) {
    segment(bencher, step, 2);
}

// ---------------------------------------------------------------------------------------------
// prefetch distance (the default, `DEFAULT_PREFETCH`, is chosen from this)

#[divan::bench(args = [0, 2, 4, 8, 16, 32], sample_count = 20)]
fn prefetch_avx2_r16(bencher: Bencher, distance: usize) {
    let step = format!("x_avx2_r16_pf{distance}");
    segment(bencher, &step, 0);
}
