//! `.tns` text: the parser must return a tensor or a typed error, and a small tensor it accepts
//! must build and give the oracle's MTTKRP.
#![no_main]

use alto::format::{AnyAlto, BuildOptions};
use alto::mttkrp::{compare_with_oracle, mttkrp, mttkrp_oracle, MttkrpOptions, Workspace};
use alto::Matrix;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(coo) = alto::io::tns::read_tns_from(data, Path::new("fuzz.tns"), None) else {
        return;
    };
    if coo.dims().iter().any(|&d| d > 1 << 12) {
        return; // accepted; factors this large are the memory plan's business, not the parser's
    }
    let opts = BuildOptions {
        partitions: 2,
        ..Default::default()
    };
    let Ok((t, _)) = AnyAlto::build(&coo, &opts) else {
        return;
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let factors: Vec<Matrix> =
        coo.dims().iter().map(|&d| Matrix::random(d as usize, 3, d)).collect();
    let mut ws = Workspace::new(&t, 3);
    for mode in 0..t.order() {
        let want = mttkrp_oracle(&t.to_coo(), &factors, mode).unwrap();
        let mut got = Matrix::zeros(t.dims()[mode] as usize, 3);
        mttkrp(&t, &factors, mode, &mut got, &MttkrpOptions::default(), &mut ws, &pool).unwrap();
        assert!(compare_with_oracle(&t.to_coo(), &factors, mode, &got, &want) <= 1.0);
    }
});
