//! Hostile input: valid `.alto`, `.tns` and `.npy` files, damaged on purpose. The `.alto` CRC is
//! recomputed after every change, so the checksum cannot hide a bug in the structural checks.
//! Each case must end in a typed error or in a tensor whose MTTKRP equals the oracle's on every
//! mode and strategy: never a panic, an abort, a hang or a wrong answer. A damaged boundary flag
//! must be an error (a wrong flag makes the flagged strategy write a shared row without atomics).
//!
//! Proptest runs a bounded number of cases (`PROPTEST_CASES` raises it).

use alto::format::{AnyAlto, BuildOptions};
use alto::io::binfile::{parse_alto, write_alto};
use alto::io::tns::read_tns_from;
use alto::mttkrp::Workspace;
use alto::mttkrp::{compare_with_oracle, mttkrp, mttkrp_oracle, MttkrpOptions, SyncChoice};
use alto::{CooTensor, Matrix};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use std::path::Path;

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a 2-thread pool")
}

/// A clustered random tensor: segments share rows, so flagged modes have flags set and clear.
fn clustered(dims: &[u64], nnz: usize, seed: u64) -> CooTensor {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let inds = dims
        .iter()
        .map(|&d| {
            (0..nnz)
                .map(|_| {
                    if rng.random_bool(0.5) {
                        rng.random_range(0..d.min(4))
                    } else {
                        rng.random_range(0..d)
                    }
                })
                .collect()
        })
        .collect();
    let vals = (0..nnz).map(|_| rng.random_range(-1.0..1.0)).collect();
    CooTensor::new(dims.to_vec(), inds, vals).expect("valid coordinates")
}

/// The bytes of a valid `.alto` file: order 3, 3 segments, flags on the low-reuse modes.
fn valid_alto_bytes(dims: &[u64], nnz: usize, seed: u64) -> Vec<u8> {
    let coo = clustered(dims, nnz, seed);
    let opts = BuildOptions {
        partitions: 3,
        ..Default::default()
    };
    let (t, _) = AnyAlto::build(&coo, &opts).expect("build");
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("t.alto");
    write_alto(&p, &t).expect("write");
    std::fs::read(&p).expect("read back")
}

/// Rewrites the trailing CRC-32 so it matches the (damaged) body.
fn recrc(bytes: &mut [u8]) {
    if bytes.len() < 4 {
        return;
    }
    let n = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..n]);
    bytes[n..].copy_from_slice(&crc.to_le_bytes());
}

/// Every mode under every strategy on 2 threads equals the oracle, or the call is a typed error.
fn assert_oracle_or_error(t: &AnyAlto) {
    let coo = t.to_coo();
    let pool = pool();
    let rank = 3;
    let factors: Vec<Matrix> = t
        .dims()
        .iter()
        .enumerate()
        .map(|(m, &d)| Matrix::random(d as usize, rank, m as u64))
        .collect();
    let mut ws = Workspace::new(t, rank);
    for mode in 0..t.order() {
        let want = mttkrp_oracle(&coo, &factors, mode).expect("oracle");
        for sync in ["auto", "pull", "atomic", "flagged"] {
            let opts = MttkrpOptions {
                sync: sync.parse::<SyncChoice>().expect("strategy name"),
                ..Default::default()
            };
            let mut got = Matrix::zeros(t.dims()[mode] as usize, rank);
            if mttkrp(t, &factors, mode, &mut got, &opts, &mut ws, &pool).is_ok() {
                let err = compare_with_oracle(&coo, &factors, mode, &got, &want);
                assert!(err <= 1.0, "mode {mode} {sync}: error ratio {err}");
            }
        }
    }
}

/// The outcome rule for a damaged `.alto` file.
fn check_alto(bytes: &[u8]) {
    if let Ok(t) = parse_alto(bytes) {
        assert_oracle_or_error(&t);
    }
}

/// Field offsets of the `.alto` header for order `n`.
struct Header {
    order: usize,
    parts: usize,
}

impl Header {
    const VERSION: usize = 8;
    const WIDTH: usize = 12;
    const ORDER: usize = 16;
    fn dims(&self) -> usize {
        24
    }
    fn counts(&self) -> usize {
        self.dims() + 8 * self.order + 16 * self.order
    }
    fn nnz(&self) -> usize {
        self.counts()
    }
    fn partitions(&self) -> usize {
        self.counts() + 8
    }
    fn flags(&self) -> usize {
        self.counts() + 32
    }
    fn bounds(&self) -> usize {
        self.flags() + 4 * self.order
    }
    fn intervals(&self) -> usize {
        self.bounds() + 8 * (self.parts + 1)
    }
    fn indices(&self) -> usize {
        self.intervals() + 16 * self.parts * self.order
    }
    /// (offset, width in bytes) of every header field.
    fn fields(&self) -> Vec<(usize, usize)> {
        let mut f = vec![
            (Self::VERSION, 4),
            (Self::WIDTH, 4),
            (Self::ORDER, 4),
            (20, 4),
        ];
        for m in 0..self.order {
            f.push((self.dims() + 8 * m, 8));
        }
        for k in 0..4 {
            f.push((self.counts() + 8 * k, 8));
        }
        for m in 0..self.order {
            f.push((self.flags() + 4 * m, 4));
        }
        for p in 0..=self.parts {
            f.push((self.bounds() + 8 * p, 8));
        }
        f
    }
}

const DIMS: [u64; 3] = [30, 40, 50];
const HEADER: Header = Header { order: 3, parts: 3 };

#[test]
fn the_valid_file_parses_and_matches_the_oracle() {
    let bytes = valid_alto_bytes(&DIMS, 400, 1);
    let t = parse_alto(&bytes).expect("valid file");
    assert!((0..3).any(|m| t.flag_bit(m).is_some()), "no flagged mode");
    assert_oracle_or_error(&t);
}

#[test]
fn every_header_field_at_0_1_max_and_max_minus_1_is_rejected_or_correct() {
    let good = valid_alto_bytes(&DIMS, 400, 2);
    for (off, width) in HEADER.fields() {
        let max: u64 = if width == 4 {
            u32::MAX as u64
        } else {
            u64::MAX
        };
        for v in [0, 1, max, max - 1] {
            let mut bad = good.clone();
            bad[off..off + width].copy_from_slice(&v.to_le_bytes()[..width]);
            recrc(&mut bad);
            check_alto(&bad);
        }
    }
}

#[test]
fn a_partition_count_of_u64_max_is_an_error_not_a_wrap() {
    let mut bad = valid_alto_bytes(&DIMS, 400, 3);
    let off = HEADER.partitions();
    bad[off..off + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    recrc(&mut bad);
    let e = parse_alto(&bad).expect_err("2^64-1 partitions");
    assert!(e.contains("overflow") || e.contains("truncated"), "{e}");
}

/// The index words of the file, their width, and the flag bit of each mode.
fn flag_layout(bytes: &[u8]) -> (usize, usize, Vec<i32>) {
    let width = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize / 8;
    let flags = (0..HEADER.order)
        .map(|m| {
            let o = HEADER.flags() + 4 * m;
            i32::from_le_bytes(bytes[o..o + 4].try_into().unwrap())
        })
        .collect();
    (HEADER.indices(), width, flags)
}

#[test]
fn cleared_flags_are_an_error_not_a_data_race() {
    let good = valid_alto_bytes(&DIMS, 400, 4);
    let (start, width, flags) = flag_layout(&good);
    let nnz = u64::from_le_bytes(good[HEADER.nnz()..HEADER.nnz() + 8].try_into().unwrap());
    let mut cleared_any = false;
    for bit in flags.into_iter().filter(|&b| b >= 0) {
        let mut bad = good.clone();
        for k in 0..nnz as usize {
            let byte = start + k * width + bit as usize / 8;
            bad[byte] &= !(1 << (bit % 8));
        }
        if bad != good {
            cleared_any = true;
            recrc(&mut bad);
            let e = parse_alto(&bad).expect_err("cleared flags");
            assert!(e.contains("flags"), "{e}");
        }
    }
    assert!(
        cleared_any,
        "the sample has no flag set: the test would prove nothing"
    );
}

#[test]
fn a_flag_bit_inside_the_coordinates_or_shared_by_two_modes_is_an_error() {
    let good = valid_alto_bytes(&DIMS, 400, 5);
    for (m, value) in [(0, 0i32), (1, 3), (2, 16)] {
        let mut bad = good.clone();
        let o = HEADER.flags() + 4 * m;
        bad[o..o + 4].copy_from_slice(&value.to_le_bytes());
        recrc(&mut bad);
        assert!(parse_alto(&bad).is_err(), "mode {m} flag bit {value}");
    }
    let (_, _, flags) = flag_layout(&good);
    if let Some(&b) = flags.iter().find(|&&b| b >= 0) {
        for m in 0..HEADER.order {
            let mut bad = good.clone();
            let o = HEADER.flags() + 4 * m;
            bad[o..o + 4].copy_from_slice(&b.to_le_bytes());
            recrc(&mut bad);
            check_alto(&bad);
        }
    }
}

#[test]
fn an_interval_wider_than_its_segment_or_outside_the_dims_is_an_error() {
    let good = valid_alto_bytes(&DIMS, 400, 6);
    for (k, (lo, hi)) in [(0u64, 1u64 << 40), (0, 49), (0, u64::MAX)]
        .into_iter()
        .enumerate()
    {
        let mut bad = good.clone();
        let o = HEADER.intervals() + 16 * (k % (HEADER.parts * HEADER.order));
        bad[o..o + 8].copy_from_slice(&lo.to_le_bytes());
        bad[o + 8..o + 16].copy_from_slice(&hi.to_le_bytes());
        recrc(&mut bad);
        if bad != good {
            let e = parse_alto(&bad).expect_err("widened interval");
            assert!(e.contains("interval"), "{e}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn bit_flips_with_a_recomputed_crc(seed in 0u64..4, flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4)) {
        let mut bytes = valid_alto_bytes(&DIMS, 200, seed);
        let n = bytes.len() - 4;
        for (pos, bit) in flips {
            bytes[pos.index(n)] ^= 1 << bit;
        }
        recrc(&mut bytes);
        check_alto(&bytes);
    }

    #[test]
    fn truncation_with_and_without_a_recomputed_crc(cut in any::<prop::sample::Index>(), fix in any::<bool>()) {
        let bytes = valid_alto_bytes(&DIMS, 200, 7);
        let mut short = bytes[..cut.index(bytes.len())].to_vec();
        if fix {
            recrc(&mut short);
        }
        prop_assert!(parse_alto(&short).is_err());
    }

    #[test]
    fn flags_toggled_on_random_nonzeros(seed in 0u64..4, picks in prop::collection::vec(any::<prop::sample::Index>(), 1..6)) {
        let good = valid_alto_bytes(&DIMS, 200, seed);
        let (start, width, flags) = flag_layout(&good);
        let nnz = u64::from_le_bytes(good[HEADER.nnz()..HEADER.nnz() + 8].try_into().unwrap()) as usize;
        // Each picked nonzero once: toggling one twice would restore its flag.
        let picked: std::collections::BTreeSet<usize> = picks.iter().map(|k| k.index(nnz)).collect();
        for bit in flags.into_iter().filter(|&b| b >= 0) {
            let mut bad = good.clone();
            for &k in &picked {
                let byte = start + k * width + bit as usize / 8;
                bad[byte] ^= 1 << (bit % 8);
            }
            recrc(&mut bad);
            prop_assert!(parse_alto(&bad).is_err(), "toggled flags of bit {} accepted", bit);
        }
    }

    #[test]
    fn intervals_and_bounds_shuffled(seed in 0u64..4, swaps in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 1..4), bounds in any::<bool>()) {
        let good = valid_alto_bytes(&DIMS, 200, seed);
        let mut bad = good.clone();
        let (base, size, count) = if bounds {
            (HEADER.bounds(), 8, HEADER.parts + 1)
        } else {
            (HEADER.intervals(), 8, 2 * HEADER.parts * HEADER.order)
        };
        for (a, b) in swaps {
            let (a, b) = (base + size * a.index(count), base + size * b.index(count));
            for k in 0..size {
                bad.swap(a + k, b + k);
            }
        }
        recrc(&mut bad);
        check_alto(&bad);
    }

    #[test]
    fn tns_text_from_hostile_tokens(lines in prop::collection::vec(prop::collection::vec(prop_oneof![
        Just("1".to_string()), Just("2".to_string()), Just("7".to_string()),
        Just("0".to_string()), Just("-3".to_string()), Just("1099511627776".to_string()),
        Just("18446744073709551615".to_string()), Just("18446744073709551616".to_string()),
        Just("nan".to_string()), Just("inf".to_string()), Just("1e308".to_string()),
        Just("2.5".to_string()), Just("#".to_string()), Just("\u{fffd}".to_string()),
        "[0-9]{1,3}",
    ], 0..6), 0..12)) {
        let text: String = lines.iter().map(|l| l.join(" ") + "\n").collect();
        check_tns(text.as_bytes());
    }

    #[test]
    fn tns_bytes_flipped_and_cut(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6), cut in any::<prop::sample::Index>()) {
        let mut text = b"# a comment\n1 1 1 1.5\n2 3 1 -2\n4 4 2 3.25\n1 2 3 0.5\n".to_vec();
        for (pos, byte) in flips {
            let n = text.len();
            text[pos.index(n)] = byte;
        }
        let n = text.len();
        text.truncate(cut.index(n + 1));
        check_tns(&text);
    }

    #[test]
    fn npy_headers_flipped_and_cut(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4), cut in any::<prop::sample::Index>(), shape in prop::option::of(prop_oneof![Just("(1099511627776, 1099511627776)"), Just("(18446744073709551615,)"), Just("(4, 0)"), Just("(0, 4)"), Just("(-1, 3)")])) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.npy");
        Matrix::random(5, 3, 1).write_npy(&p).unwrap();
        let mut bytes = std::fs::read(&p).unwrap();
        if let Some(shape) = shape {
            bytes = npy_with_shape(shape, &bytes[bytes.len() - 15 * 8..]);
        }
        let header = bytes.len().min(128);
        for (pos, byte) in flips {
            bytes[pos.index(header)] = byte;
        }
        let n = bytes.len();
        bytes.truncate(cut.index(n + 1).max(n / 2));
        std::fs::write(&p, &bytes).unwrap();
        check_npy(&p);
    }
}

/// The outcome rule for `.tns` text: an error, or a tensor whose MTTKRP equals the oracle's
/// (checked when its factors are small enough for a unit test).
fn check_tns(text: &[u8]) {
    let Ok(coo) = read_tns_from(text, Path::new("hostile.tns"), None) else {
        return;
    };
    if coo.dims().iter().any(|&d| d > 1 << 16) {
        return; // valid, but the factors would not fit a unit test; the CLI plans memory
    }
    let opts = BuildOptions {
        partitions: 2,
        ..Default::default()
    };
    if let Ok((t, _)) = AnyAlto::build(&coo, &opts) {
        assert_oracle_or_error(&t);
    }
}

/// A well-formed version-1 `.npy` header claiming `shape` (Python tuple text) over `data`.
fn npy_with_shape(shape: &str, data: &[u8]) -> Vec<u8> {
    let mut dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

/// The outcome rule for `.npy`: an error, or a matrix whose shape its data fills.
fn check_npy(p: &Path) {
    if let Ok(m) = Matrix::read_npy(p) {
        assert_eq!(m.as_slice().len(), m.rows() * m.cols());
    }
}

#[test]
fn npy_with_an_impossible_shape_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.npy");
    Matrix::random(5, 3, 1).write_npy(&p).unwrap();
    let data = std::fs::read(&p).unwrap();
    let data = &data[data.len() - 15 * 8..];
    std::fs::write(&p, npy_with_shape("(5, 3)", data)).unwrap();
    assert_eq!(
        Matrix::read_npy(&p).unwrap().rows(),
        5,
        "the helper writes valid files"
    );
    for shape in [
        "(9, 3)",
        "(1099511627776, 1099511627776)",
        "(18446744073709551615, 2)",
    ] {
        std::fs::write(&p, npy_with_shape(shape, data)).unwrap();
        let e = Matrix::read_npy(&p).expect_err(shape).to_string();
        assert!(e.contains("m.npy"), "{e}");
    }
}
