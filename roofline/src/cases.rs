//! The paper's representative MTTKRP cases (its Fig. 9) on stand-in tensors, and their
//! placement on a stated profile from the model alone.

use crate::counters::{measured_intensity, CounterDocument};
use crate::plot::PlotPoint;
use crate::profile::{MachineProfile, ProfileCase};
use alto::dispatch::{DispatchOptions, KernelChoice};
use alto::format::{AnyAlto, BuildOptions, Layout};
use alto::gen::{find_preset, preset};
use alto::harness::counters::CounterSet;
use alto::harness::model::{mttkrp_call_traffic, CallShape};
use alto::mttkrp::{mttkrp, mttkrp_flops, ConflictResolution, MttkrpOptions, Workspace};
use alto::{CooTensor, Matrix};
use alto_kernels::{KernelId, RankSpec};
use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// One case to measure.
#[derive(Clone, Debug)]
pub struct CaseSpec {
    pub label: String,
    pub source: CaseSource,
    /// 0-based target mode.
    pub mode: usize,
    pub rank: usize,
    pub rank_specialized: bool,
}

#[derive(Clone, Debug)]
pub enum CaseSource {
    /// A generator preset at `nnz` nonzeros.
    Preset {
        name: &'static str,
        nnz: u64,
        keep_dims: bool,
    },
    /// A tensor file given with `--tensor`.
    File(PathBuf),
}

/// Default stand-in sizes: the whole command stays within about 5 minutes on 2 cores.
const NIPS_NNZ: f64 = 1_000_000.0;
const NELL2_NNZ: f64 = 2_000_000.0;
const AMAZON_NNZ: f64 = 1_000_000.0;
const DARPA_NNZ: f64 = 2_000_000.0;

/// Labels use the paper's 1-based mode numbers.
fn label(tensor: &str, mode: usize, spec: bool) -> String {
    format!(
        "{tensor} mode {}{}",
        mode + 1,
        if spec { "" } else { " (no rank spec.)" }
    )
}

/// SPEC section 8's cases: nips mode 4 with and without rank specialization, nell-2 mode 3,
/// amazon mode 1 (true dims, a 65-bit index), darpa modes 1 and 3 (limited reuse: atomics).
pub fn paper_cases(scale: f64, nnz: Option<u64>, rank: usize) -> Vec<CaseSpec> {
    let n = |default: f64| nnz.unwrap_or((default * scale).round().max(1000.0) as u64);
    let case = |name: &'static str, mode: usize, spec: bool, nnz: u64, keep_dims: bool| CaseSpec {
        label: label(name, mode, spec),
        source: CaseSource::Preset {
            name,
            nnz,
            keep_dims,
        },
        mode,
        rank,
        rank_specialized: spec,
    };
    vec![
        case("nips", 3, true, n(NIPS_NNZ), false),
        case("nips", 3, false, n(NIPS_NNZ), false),
        case("nell-2", 2, true, n(NELL2_NNZ), false),
        case("amazon", 0, true, n(AMAZON_NNZ), true),
        case("darpa", 0, true, n(DARPA_NNZ), false),
        case("darpa", 2, true, n(DARPA_NNZ), false),
    ]
}

/// A measured point, or a modelled one (a stated profile's case at its model bound).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CaseResult {
    pub case: String,
    pub tensor: String,
    pub dims: Vec<u64>,
    pub nnz: u64,
    /// 0-based mode.
    pub mode: usize,
    pub rank: usize,
    /// The ISA of the kernel that ran (for a stated profile: empty).
    pub isa: String,
    pub kernel: String,
    pub accumulation: String,
    pub index_bits: u32,
    pub index_width: String,
    pub threads: usize,
    pub min_s: f64,
    pub median_s: f64,
    pub max_s: f64,
    /// Algorithmic flops over the median time; `None` for a modelled case.
    pub measured_gflops: Option<f64>,
    pub oi: f64,
    pub oi_worst: f64,
    /// `model` (SPEC section 11), `counters:imc` or `counters:llc-misses` (see
    /// [`crate::counters`]).
    pub oi_source: String,
    /// flops / counted L3 bytes, when counted.
    pub oi_l3: Option<f64>,
    /// Why the intensity is modelled where counters were looked for, or what the counters
    /// cover.
    pub oi_note: String,
    /// The model bound: min(peak, DRAM bandwidth x OI).
    pub model_bound_gflops: f64,
    /// measured / model bound; `None` for a modelled case.
    pub percent_of_bound: Option<f64>,
}

/// What a timed case measured: its times, one call's flops and its intensity.
pub struct Measurement {
    pub min_s: f64,
    pub median_s: f64,
    pub max_s: f64,
    /// Algorithmic flops of one call.
    pub flops: f64,
    /// [`region_intensity`]'s answer: intensity, its source, the L3 intensity and a note.
    pub intensity: (f64, String, Option<f64>, String),
    /// The model's worst-case intensity.
    pub oi_worst: f64,
}

impl CaseResult {
    /// A measured case's timing, intensity and bound under `profile`'s DRAM roof, for a
    /// struct update whose other fields name the case.
    pub fn measured(profile: &MachineProfile, m: Measurement) -> CaseResult {
        let (oi, oi_source, oi_l3, oi_note) = m.intensity;
        let gflops = m.flops / m.median_s / 1e9;
        let bound = profile.bound(profile.dram(), oi);
        CaseResult {
            min_s: m.min_s,
            median_s: m.median_s,
            max_s: m.max_s,
            measured_gflops: Some(gflops),
            oi,
            oi_worst: m.oi_worst,
            oi_source,
            oi_l3,
            oi_note,
            model_bound_gflops: bound,
            percent_of_bound: Some(100.0 * gflops / bound),
            ..CaseResult::default()
        }
    }

    /// Measured cases sit at their measured GFLOP/s; modelled ones at their model bound.
    pub fn plot_point(&self) -> PlotPoint {
        PlotPoint {
            label: self.case.clone(),
            oi: self.oi,
            oi_worst: Some(self.oi_worst),
            gflops: self.measured_gflops.unwrap_or(self.model_bound_gflops),
            at_model_bound: self.measured_gflops.is_none(),
            pull: self.accumulation == "pull",
            wide_index: self.index_width == "u128",
        }
    }
}

/// The operational intensity of a measured region: counted where the counters allow (see
/// [`crate::counters`]), else the model's best case; with its source and a note.
pub fn region_intensity(
    counters: Option<&CounterDocument>,
    flops: f64,
    intel: bool,
    model_oi: f64,
) -> (f64, String, Option<f64>, String) {
    let measured = match counters {
        Some(doc) => measured_intensity(doc, flops, intel),
        None => Err("no counter readings with this record".into()),
    };
    match measured {
        Ok(m) => (
            m.oi,
            m.source.to_string(),
            m.oi_l3,
            format!(
                "{:.0} bytes counted; flops from the algorithm",
                m.dram_bytes
            ),
        ),
        Err(why) => (model_oi, "model".into(), None, why),
    }
}

/// Loads or generates the case's tensor and names it.
fn case_tensor(spec: &CaseSpec, seed: u64) -> Result<(String, CooTensor)> {
    match &spec.source {
        CaseSource::Preset {
            name,
            nnz,
            keep_dims,
        } => {
            let p = find_preset(name).ok_or_else(|| anyhow!("unknown preset {name}"))?;
            Ok((name.to_string(), preset(p, *nnz, seed, *keep_dims)?))
        }
        CaseSource::File(path) => {
            let coo = alto::io::tns::read_tns(path, None)?;
            let name = path
                .file_stem()
                .map_or("tensor".into(), |s| s.to_string_lossy().into_owned());
            Ok((name, coo))
        }
    }
}

/// The kernel a case runs: the dispatcher's choice for the rank, or, without rank
/// specialization, the runtime-rank kernel of the same ISA (the forced `ALTO_ISA` one, else
/// the best), so the two nips cases differ only in specialization.
pub fn case_kernel(rank_specialized: bool, dispatch: &DispatchOptions) -> KernelChoice {
    if rank_specialized {
        dispatch.kernel(KernelChoice::Auto)
    } else {
        KernelChoice::Named(KernelId {
            isa: dispatch.isa(),
            rank: RankSpec::Dynamic,
        })
    }
}

/// Builds the tensor, times `reps` MTTKRP calls of the case's mode after a warm-up, and places
/// it under `profile`'s DRAM roof with the model's operational intensity. `dispatch`: what the
/// binary forces (`ALTO_ISA` / `ALTO_DECODE`).
pub fn run_case(
    spec: &CaseSpec,
    pool: &rayon::ThreadPool,
    reps: usize,
    profile: &MachineProfile,
    dispatch: &DispatchOptions,
) -> Result<CaseResult> {
    let (tensor, coo) = case_tensor(spec, 1)?;
    let threads = pool.current_num_threads();
    let opts = BuildOptions {
        partitions: threads,
        ..Default::default()
    };
    let (alto, _) = pool
        .install(|| AnyAlto::build(&coo, &opts))
        .with_context(|| format!("building {}", spec.label))?;
    drop(coo);
    if spec.mode >= alto.order() {
        anyhow::bail!(
            "{}: mode {} does not exist (order {})",
            spec.label,
            spec.mode + 1,
            alto.order()
        );
    }
    let factors: Vec<Matrix> = alto
        .dims()
        .iter()
        .enumerate()
        .map(|(m, &d)| Matrix::random(d as usize, spec.rank, m as u64))
        .collect();
    let mopts = MttkrpOptions {
        kernel: case_kernel(spec.rank_specialized, dispatch),
        decode: dispatch.decode,
        ..Default::default()
    };
    let mut ws = Workspace::new(&alto, spec.rank);
    let mut out = Matrix::zeros(alto.dims()[spec.mode] as usize, spec.rank);
    let run = mttkrp(&alto, &factors, spec.mode, &mut out, &mopts, &mut ws, pool)?;
    // Counters (when the machine has them) cover exactly the timed calls.
    let mut counters = CounterSet::open_default(pool);
    let (times, report) = counters.measure(|| -> Result<Vec<f64>> {
        let mut times = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            mttkrp(&alto, &factors, spec.mode, &mut out, &mopts, &mut ws, pool)?;
            times.push(t.elapsed().as_secs_f64());
        }
        Ok(times)
    });
    let mut times = times?;
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let flops = mttkrp_flops(alto.order(), spec.rank, alto.nnz());
    let pull = run.sync == ConflictResolution::Pull;
    let traffic = mttkrp_call_traffic(&CallShape::of(&alto, spec.mode, spec.rank, pull));
    let doc = CounterDocument::from_report(&report).ok();
    let intel = alto::harness::topology::CpuModel::detect().is_intel();
    let intensity = region_intensity(
        doc.as_ref(),
        flops * times.len() as f64,
        intel,
        traffic.intensity_best(),
    );
    let measured = Measurement {
        min_s: times[0],
        median_s: median,
        max_s: times[times.len() - 1],
        flops,
        intensity,
        oi_worst: traffic.intensity_worst(),
    };
    Ok(CaseResult {
        case: spec.label.clone(),
        tensor,
        dims: alto.dims().to_vec(),
        nnz: alto.nnz() as u64,
        mode: spec.mode,
        rank: spec.rank,
        isa: run.kernel.isa.name().to_string(),
        kernel: run.name,
        accumulation: run.sync.to_string(),
        index_bits: alto.layout().total_bits(),
        index_width: alto.width().name().to_string(),
        threads,
        ..CaseResult::measured(profile, measured)
    })
}

/// Places a stated profile's cases at the model's operational intensity (the paper's true
/// tensor shapes) and their model bound under the DRAM roof. The paper's heuristic picks the
/// accumulation (pull when nnz / dim > 4).
pub fn model_cases(profile: &MachineProfile) -> Result<Vec<CaseResult>> {
    profile
        .cases
        .iter()
        .map(|c: &ProfileCase| {
            let p = find_preset(&c.tensor)
                .ok_or_else(|| anyhow!("profile case: unknown tensor `{}`", c.tensor))?;
            if c.mode >= p.dims.len() {
                anyhow::bail!("profile case {}: mode {} out of range", c.tensor, c.mode);
            }
            let layout = Layout::new(p.dims)?;
            // The paper's code rounds the index to 64 or 128 bits.
            let index_bytes = if layout.total_bits() <= 64 { 8 } else { 16 };
            let pull = p.nnz / p.dims[c.mode] > alto::format::DEFAULT_MIN_FIBER_REUSE;
            let traffic = mttkrp_call_traffic(&CallShape {
                dims: p.dims,
                mode: c.mode,
                nnz: p.nnz,
                rank: c.rank,
                index_bytes,
                staged_rows: 0, // the paper's staging depends on its 112 segments: not modelled
            });
            let oi = traffic.intensity_best();
            let bound = profile.bound(profile.dram(), oi);
            Ok(CaseResult {
                case: label(p.name, c.mode, c.rank_specialized),
                tensor: p.name.to_string(),
                dims: p.dims.to_vec(),
                nnz: p.nnz,
                mode: c.mode,
                rank: c.rank,
                isa: String::new(),
                kernel: if c.rank_specialized {
                    format!("r{}", c.rank)
                } else {
                    "rdyn".into()
                },
                accumulation: if pull { "pull" } else { "atomic" }.into(),
                index_bits: layout.total_bits(),
                index_width: if index_bytes == 8 { "u64" } else { "u128" }.into(),
                threads: profile.threads,
                min_s: f64::NAN,
                median_s: f64::NAN,
                max_s: f64::NAN,
                measured_gflops: None,
                oi,
                oi_worst: traffic.intensity_worst(),
                oi_source: "model".into(),
                oi_l3: None,
                oi_note: "a stated profile's case: no measurement".into(),
                model_bound_gflops: bound,
                percent_of_bound: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{BandwidthCeiling, PeakCeiling};
    use alto_kernels::Isa;

    fn tiny_profile() -> MachineProfile {
        MachineProfile {
            name: "test".into(),
            kind: "stated".into(),
            threads: 1,
            peaks: vec![PeakCeiling {
                name: "peak".into(),
                gflops: 10.0,
                basis: String::new(),
            }],
            bandwidths: vec![BandwidthCeiling {
                name: "DRAM".into(),
                gbytes_per_s: 1.0,
                basis: String::new(),
            }],
            notes: Vec::new(),
            cases: Vec::new(),
            unresolved: Vec::new(),
        }
    }

    #[test]
    fn a_forced_isa_reaches_both_nips_cases() {
        let scalar = DispatchOptions {
            isa: Some(Isa::Scalar),
            decode: None,
        };
        assert_eq!(
            case_kernel(false, &scalar),
            KernelChoice::Named(KernelId {
                isa: Isa::Scalar,
                rank: RankSpec::Dynamic
            })
        );
        assert_eq!(case_kernel(true, &scalar), KernelChoice::Isa(Isa::Scalar));
        // Nothing forced: the runtime-rank case takes the best ISA, like `auto`.
        let free = DispatchOptions::default();
        match case_kernel(false, &free) {
            KernelChoice::Named(k) => assert_eq!(k.isa, free.isa()),
            other => panic!("{other:?}"),
        }

        // Run both cases at the forced ISA: each result names the ISA that ran.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        for specialized in [true, false] {
            let spec = CaseSpec {
                label: "nips".into(),
                source: CaseSource::Preset {
                    name: "nips",
                    nnz: 2000,
                    keep_dims: false,
                },
                mode: 3,
                rank: 16,
                rank_specialized: specialized,
            };
            let r = run_case(&spec, &pool, 1, &tiny_profile(), &scalar).unwrap();
            assert_eq!(r.isa, "scalar", "{}", r.kernel);
            assert!(r.kernel.contains("scalar"), "{}", r.kernel);
            assert_eq!(r.kernel.ends_with("rdyn"), !specialized, "{}", r.kernel);
        }
    }
}
