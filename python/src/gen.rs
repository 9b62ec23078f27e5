//! `gen`: the synthetic tensors of `alto gen`, deterministic for a seed.

use crate::arrays::matrix_to_numpy;
use crate::tensor::{check_plan, from_coo_tensor, is_alto_file};
use crate::{detached, py_err, thread_count};
use alto::gen::{find_preset, PRESETS};
use alto::CooTensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::path::PathBuf;

/// `dims` as u64 (each at least 1 is checked by the generators).
fn dims_arg(dims: Option<Vec<i64>>, kind: &str) -> PyResult<Vec<u64>> {
    let dims = dims.ok_or_else(|| PyValueError::new_err(format!("{kind} needs dims")))?;
    dims.iter()
        .enumerate()
        .map(|(mode, &d)| {
            u64::try_from(d).ok().filter(|&d| d >= 1).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "dimension {d} of mode {mode} is invalid (must be at least 1)"
                ))
            })
        })
        .collect()
}

/// Generates a synthetic sparse tensor, as `alto gen` (the same tensor for the same
/// arguments and seed).
///
/// `kind`: a paper preset (`nips`, `uber`, `chicago`, `vast`, `darpa`, `enron`, `nell-2`,
/// `fb-m`, `flickr`, `delicious`, `nell-1`, `amazon`, `patents`, `reddit`, `lbnl`: a stand-in
/// with the paper tensor's short modes, long modes scaled by the nonzero ratio unless
/// `keep_dims`), `uniform` (independent uniform coordinates over `dims`), `skewed`
/// (hierarchical log-normal over `dims`, with `cv_slices` and `cv_fibers`) or `lowrank` (an
/// exactly rank-`rank` tensor over `dims`). `nnz`: nonzeros (approximate for presets and
/// lowrank; duplicates are summed). `output`: also write the tensor to this `.tns` or `.alto`
/// file. `return_factors` (lowrank only): return `(tensor, factors)` with the planted `(I_n,
/// rank)` factors. `threads`: segments and threads (default: all CPUs).
#[pyfunction]
#[pyo3(signature = (
    kind, nnz, *, seed=0, dims=None, rank=None, cv_slices=1.0, cv_fibers=1.0, keep_dims=false,
    return_factors=false, output=None, threads=None
))]
#[allow(clippy::too_many_arguments)]
pub fn gen(
    py: Python<'_>,
    kind: &str,
    nnz: i64,
    seed: u64,
    dims: Option<Vec<i64>>,
    rank: Option<i64>,
    cv_slices: f64,
    cv_fibers: f64,
    keep_dims: bool,
    return_factors: bool,
    output: Option<PathBuf>,
    threads: Option<i64>,
) -> PyResult<Py<PyAny>> {
    let threads = thread_count(threads)?;
    let nnz = u64::try_from(nnz)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| PyValueError::new_err(format!("nnz must be at least 1, got {nnz}")))?;
    alto::gen::check_cv("cv_slices", cv_slices).map_err(py_err)?;
    alto::gen::check_cv("cv_fibers", cv_fibers).map_err(py_err)?;
    if return_factors && kind != "lowrank" {
        return Err(PyValueError::new_err(
            "return_factors applies to lowrank only",
        ));
    }
    let rank = rank
        .map(|r| {
            usize::try_from(r)
                .ok()
                .filter(|&r| r >= 1)
                .ok_or_else(|| PyValueError::new_err(format!("rank must be at least 1, got {r}")))
        })
        .transpose()?;
    let lowrank_rank = match (kind, rank) {
        ("lowrank", None) => return Err(PyValueError::new_err("lowrank needs rank")),
        (_, r) => r.unwrap_or(0),
    };
    let preset = match kind {
        "uniform" | "skewed" | "lowrank" => None,
        name => {
            let Some(p) = find_preset(name) else {
                let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
                return Err(PyValueError::new_err(format!(
                    "unknown generator `{name}` (uniform, skewed, lowrank, or a preset: {})",
                    names.join(", ")
                )));
            };
            if dims.is_some() || rank.is_some() {
                return Err(PyValueError::new_err(format!(
                    "dims and rank apply to uniform/lowrank, not to the preset `{name}`"
                )));
            }
            Some(p)
        }
    };
    let dims = match preset {
        Some(p) => alto::gen::standin_dims(p, nnz, keep_dims),
        None => dims_arg(dims, kind)?,
    };
    let mut plan = alto::gen::memory_plan(&dims, nnz, kind != "uniform" && kind != "lowrank");
    if let (Some(rank), "lowrank") = (rank, kind) {
        let rows = dims.iter().fold(0u64, |s, &d| s.saturating_add(d));
        let entries = rows.saturating_mul(rank as u64);
        plan.add("planted factors", alto::memory::bytes_for(entries, 8));
    }
    check_plan(plan, "lower nnz or dims")?;
    let (coo, planted) = detached(
        py,
        || -> alto::Result<(CooTensor, Option<Vec<alto::Matrix>>)> {
            Ok(match (kind, preset) {
                (_, Some(p)) => (alto::gen::preset(p, nnz, seed, keep_dims)?, None),
                ("uniform", _) => (alto::gen::uniform(&dims, nnz, seed)?, None),
                ("skewed", _) => (
                    alto::gen::hierarchical(&dims, nnz, cv_slices, cv_fibers, seed)?,
                    None,
                ),
                _ => {
                    let (coo, factors) = alto::gen::lowrank(&dims, lowrank_rank, nnz, seed)?;
                    (coo, Some(factors))
                }
            })
        },
    )?
    .map_err(py_err)?;
    let tensor = from_coo_tensor(py, &coo, threads)?;
    // As the command: `.tns` gets the generated nonzeros, `.alto` the built tensor.
    match output {
        Some(path) if !is_alto_file(&path)? => {
            detached(py, || alto::io::tns::write_tns(&path, &coo))?.map_err(py_err)?
        }
        Some(path) => tensor.save(py, path)?,
        None => {}
    }
    let tensor = Bound::new(py, tensor)?;
    match planted {
        Some(factors) if return_factors => {
            let arrays = factors
                .into_iter()
                .map(|f| matrix_to_numpy(py, f))
                .collect::<PyResult<Vec<_>>>()?;
            Ok((tensor, PyList::new(py, arrays)?)
                .into_pyobject(py)?
                .into_any()
                .unbind())
        }
        _ => Ok(tensor.into_any().unbind()),
    }
}
