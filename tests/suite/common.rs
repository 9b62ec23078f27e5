//! Helpers shared by the integration tests: running the `alto` binary, the optional real-data
//! folder, and random tensors.

// Builds without the `cli` or `harness` features use only some of the helpers.
#![allow(dead_code)]

use alto::CooTensor;
use rand::Rng;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Runs the `alto` binary of this build with `args`.
#[cfg(feature = "cli")]
pub fn alto(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_alto"))
        .args(args)
        .output()
        .expect("run alto")
}

/// The standard error of a finished command, lossily decoded.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `../shared/data/real` beside the checkout, when present (real FROSTT tensors).
pub fn real_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/real");
    d.is_dir().then_some(d)
}

/// The `.tns` files of [`real_dir`], sorted; `None` (after saying so) when the folder is absent.
pub fn real_tensors() -> Option<Vec<PathBuf>> {
    let Some(dir) = real_dir() else {
        eprintln!("skipping: ../shared/data/real is absent");
        return None;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tns"))
        .collect();
    files.sort();
    Some(files)
}

/// `nnz` coordinates uniform in `0..min(dim, coord_cap)` per mode (mode by mode), then values
/// uniform in `values`: duplicates come from the draws themselves.
pub fn uniform_tensor(
    dims: &[u64],
    nnz: usize,
    coord_cap: u64,
    values: Range<f64>,
    rng: &mut impl Rng,
) -> CooTensor {
    let inds = dims
        .iter()
        .map(|&d| {
            (0..nnz)
                .map(|_| rng.random_range(0..d.min(coord_cap)))
                .collect()
        })
        .collect();
    let vals = (0..nnz).map(|_| rng.random_range(values.clone())).collect();
    CooTensor::new(dims.to_vec(), inds, vals).unwrap()
}

/// Random nonzeros with clustered coordinates (so segments share rows) and some duplicates.
pub fn clustered_tensor(dims: &[u64], nnz: usize, rng: &mut impl Rng) -> CooTensor {
    let mut inds: Vec<Vec<u64>> = vec![Vec::with_capacity(nnz); dims.len()];
    let mut vals = Vec::with_capacity(nnz);
    for k in 0..nnz {
        if k > 0 && rng.random_bool(0.1) {
            // duplicate of an earlier coordinate
            let j = rng.random_range(0..k);
            for ind in inds.iter_mut() {
                let x = ind[j];
                ind.push(x);
            }
        } else {
            for (m, ind) in inds.iter_mut().enumerate() {
                // A few hot rows per mode plus uniform ones.
                let hot = rng.random_bool(0.5);
                let x = if hot {
                    rng.random_range(0..dims[m].min(5))
                } else {
                    rng.random_range(0..dims[m])
                };
                ind.push(x);
            }
        }
        vals.push(rng.random_range(-1.0..1.0));
    }
    CooTensor::new(dims.to_vec(), inds, vals).unwrap()
}
