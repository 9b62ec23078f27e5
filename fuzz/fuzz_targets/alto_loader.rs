//! `.alto` bytes: the input is a file body whose CRC the target appends, so the fuzzer reaches
//! the structural checks instead of dying at the checksum. A file the loader accepts must give
//! the oracle's MTTKRP under every strategy on two threads (a wrong boundary flag would not).
#![no_main]

use alto::io::binfile::parse_alto;
use alto::mttkrp::{compare_with_oracle, mttkrp, mttkrp_oracle, MttkrpOptions, SyncChoice};
use alto::mttkrp::Workspace;
use alto::Matrix;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let mut file = body.to_vec();
    file.extend_from_slice(&crc32(body).to_le_bytes());
    let Ok(t) = parse_alto(&file) else { return };
    if t.dims().iter().any(|&d| d > 1 << 12) {
        return;
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let factors: Vec<Matrix> =
        t.dims().iter().map(|&d| Matrix::random(d as usize, 3, d)).collect();
    let coo = t.to_coo();
    let mut ws = Workspace::new(&t, 3);
    for mode in 0..t.order() {
        let want = mttkrp_oracle(&coo, &factors, mode).unwrap();
        for sync in ["pull", "atomic", "flagged"] {
            let opts = MttkrpOptions {
                sync: sync.parse::<SyncChoice>().unwrap(),
                ..Default::default()
            };
            let mut got = Matrix::zeros(t.dims()[mode] as usize, 3);
            if mttkrp(&t, &factors, mode, &mut got, &opts, &mut ws, &pool).is_ok() {
                assert!(compare_with_oracle(&coo, &factors, mode, &got, &want) <= 1.0);
            }
        }
    }
});

/// CRC-32 (IEEE), bitwise: the fuzz crate keeps its dependencies to libfuzzer-sys and alto.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}
