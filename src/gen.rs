//! Synthetic tensors, deterministic for a seed.
//!
//! - [`preset`]: stand-ins for the paper's 15 tensors (SPEC section 9) at a requested nonzero
//!   count. Short (categorical/time) modes keep their true length; long modes are scaled by the
//!   nonzero ratio (keeps per-slice reuse, so the adaptive decisions match) unless `keep_dims`
//!   keeps the true dims (and so the true index width). Nonzeros are generated hierarchically:
//!   slices get log-normal fiber counts, fibers get log-normal nonzero counts, and the other
//!   modes' ids are drawn from log-normal popularities over randomly placed hot ids.
//! - [`uniform`]: independent uniform coordinates.
//! - [`lowrank`]: an exactly rank-R tensor, the sum of R outer products of sparse factor columns.
//! - [`lowrank_poisson`]: counts drawn from a planted rank-R Poisson model (for CP-APR).

use crate::coo::CooTensor;
use crate::error::{AltoError, Result};
use crate::format::Layout;
use crate::matrix::Matrix;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};

type Rng64 = rand_pcg::Pcg64Mcg;

/// One of the paper's tensors, as SPEC section 9 lists it.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub dims: &'static [u64],
    pub nnz: u64,
    /// Coefficient of variation of fibers per slice (published calibration; 1.0 when unknown).
    pub cv_fibers_per_slice: f64,
    /// Coefficient of variation of nonzeros per fiber (1.0 when unknown).
    pub cv_nnz_per_fiber: f64,
}

/// The 15 tensors of the paper, smallest first.
pub const PRESETS: [Preset; 15] = [
    Preset {
        name: "lbnl",
        dims: &[1_605, 4_198, 1_631, 4_209, 868_131],
        nnz: 1_698_825,
        cv_fibers_per_slice: 8.0,
        cv_nnz_per_fiber: 26.2,
    },
    Preset {
        name: "nips",
        dims: &[2_482, 2_862, 14_036, 17],
        nnz: 3_101_609,
        cv_fibers_per_slice: 0.19,
        cv_nnz_per_fiber: 0.0,
    },
    Preset {
        name: "uber",
        dims: &[183, 24, 1_140, 1_717],
        nnz: 3_309_490,
        cv_fibers_per_slice: 0.24,
        cv_nnz_per_fiber: 1.02,
    },
    Preset {
        name: "chicago",
        dims: &[6_186, 24, 77, 32],
        nnz: 5_330_673,
        cv_fibers_per_slice: 0.41,
        cv_nnz_per_fiber: 0.53,
    },
    Preset {
        name: "vast",
        dims: &[165_427, 11_374, 2, 100, 89],
        nnz: 26_021_945,
        cv_fibers_per_slice: 1.0,
        cv_nnz_per_fiber: 1.0,
    },
    Preset {
        name: "darpa",
        dims: &[22_476, 22_476, 23_776_223],
        nnz: 28_436_033,
        cv_fibers_per_slice: 13.1,
        cv_nnz_per_fiber: 23.1,
    },
    Preset {
        name: "enron",
        dims: &[6_066, 5_699, 244_268, 1_176],
        nnz: 54_202_099,
        cv_fibers_per_slice: 4.1,
        cv_nnz_per_fiber: 1.8,
    },
    Preset {
        name: "nell-2",
        dims: &[12_092, 9_184, 28_818],
        nnz: 76_879_419,
        cv_fibers_per_slice: 3.3,
        cv_nnz_per_fiber: 0.89,
    },
    Preset {
        name: "fb-m",
        dims: &[23_344_784, 23_344_784, 166],
        nnz: 99_546_551,
        cv_fibers_per_slice: 24.4,
        cv_nnz_per_fiber: 0.09,
    },
    Preset {
        name: "flickr",
        dims: &[319_686, 28_153_045, 1_607_191, 731],
        nnz: 112_890_310,
        cv_fibers_per_slice: 1.0,
        cv_nnz_per_fiber: 1.0,
    },
    Preset {
        name: "delicious",
        dims: &[532_924, 17_262_471, 2_480_308, 1_443],
        nnz: 140_126_181,
        cv_fibers_per_slice: 1.0,
        cv_nnz_per_fiber: 1.0,
    },
    Preset {
        name: "nell-1",
        dims: &[2_902_330, 2_143_368, 25_495_389],
        nnz: 143_599_552,
        cv_fibers_per_slice: 13.6,
        cv_nnz_per_fiber: 7.5,
    },
    Preset {
        name: "amazon",
        dims: &[4_821_207, 1_774_269, 1_805_187],
        nnz: 1_741_809_018,
        cv_fibers_per_slice: 1.0,
        cv_nnz_per_fiber: 1.0,
    },
    Preset {
        name: "patents",
        dims: &[46, 239_172, 239_172],
        nnz: 3_596_640_708,
        cv_fibers_per_slice: 1.0,
        cv_nnz_per_fiber: 1.0,
    },
    Preset {
        name: "reddit",
        dims: &[8_211_298, 176_962, 8_116_559],
        nnz: 4_687_474_081,
        cv_fibers_per_slice: 1.0,
        cv_nnz_per_fiber: 1.0,
    },
];

/// Modes at most this long are categorical/time modes and keep their true length.
pub const SHORT_MODE_MAX: u64 = 2048;

/// Looks a preset up by name (`nell-2`, `nell2` and `NELL-2` all work).
pub fn find_preset(name: &str) -> Option<&'static Preset> {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['-', '_'], "");
    PRESETS.iter().find(|p| norm(p.name) == norm(name))
}

/// The stand-in's dims at `nnz` nonzeros: short modes kept, long modes scaled by the nonzero
/// ratio (never below the short-mode length or above the true length), or all true dims.
pub fn standin_dims(p: &Preset, nnz: u64, keep_dims: bool) -> Vec<u64> {
    if keep_dims {
        return p.dims.to_vec();
    }
    let ratio = nnz as f64 / p.nnz as f64;
    p.dims
        .iter()
        .map(|&d| {
            if d <= SHORT_MODE_MAX {
                d
            } else {
                // Scaled by the nonzero ratio so nonzeros per slice stay as in the paper.
                ((d as f64 * ratio).round() as u64).clamp(2, d)
            }
        })
        .collect()
}

/// The largest coefficient of variation the skewed generator takes: beyond it the log-normal's
/// sigma makes every weight but one underflow, so the "skew" is a single slice.
pub const MAX_CV: f64 = 1e3;

/// A coefficient of variation must be a finite number in `0..=MAX_CV`.
pub fn check_cv(name: &str, cv: f64) -> Result<()> {
    if cv.is_finite() && (0.0..=MAX_CV).contains(&cv) {
        Ok(())
    } else {
        Err(AltoError::InvalidArgument(format!(
            "{name} must be a finite number from 0 to {MAX_CV}, got {cv:?}"
        )))
    }
}

/// What generating `nnz` nonzeros over `dims` allocates: the coordinate and value arrays
/// (with the generator's sorting copy), and for the skewed generator its per-row weights.
pub fn memory_plan(dims: &[u64], nnz: u64, per_row_weights: bool) -> crate::memory::MemoryPlan {
    use crate::memory::bytes_for;
    let mut plan = crate::memory::MemoryPlan::new();
    let per_nonzero = (dims.len() as u64 + 1) * 8 * 3;
    plan.add(
        format!("{nnz} generated nonzeros"),
        bytes_for(nnz, per_nonzero),
    );
    if per_row_weights {
        let rows = dims.iter().fold(0u64, |a, &d| a.saturating_add(d));
        plan.add(format!("row weights ({rows} rows)"), bytes_for(rows, 24));
    }
    plan
}

/// Log-normal weights with the given coefficient of variation (all ones when cv = 0).
fn lognormal_weights(n: usize, cv: f64, rng: &mut Rng64) -> Vec<f64> {
    if cv <= 0.0 {
        return vec![1.0; n];
    }
    let sigma = (1.0 + cv * cv).ln().sqrt();
    let dist = LogNormal::new(0.0, sigma).expect("finite sigma");
    (0..n).map(|_| dist.sample(rng)).collect()
}

/// Samples ids in proportion to weights (cumulative table, binary search).
struct Categorical {
    cumulative: Vec<f64>,
}

impl Categorical {
    fn new(weights: &[f64]) -> Self {
        let mut acc = 0.0;
        let cumulative = weights
            .iter()
            .map(|w| {
                acc += w;
                acc
            })
            .collect();
        Categorical { cumulative }
    }
    fn sample(&self, rng: &mut Rng64) -> u64 {
        let total = *self.cumulative.last().expect("non-empty");
        let x = rng.random::<f64>() * total;
        self.cumulative
            .partition_point(|&c| c <= x)
            .min(self.cumulative.len() - 1) as u64
    }
}

/// Stochastic rounding keeps expected totals exact.
fn round_stochastic(x: f64, rng: &mut Rng64) -> u64 {
    let f = x.floor();
    f as u64 + u64::from(rng.random::<f64>() < x - f)
}

/// A stand-in for `preset` with about `nnz` nonzeros (duplicates are possible; the ALTO
/// builder merges them).
pub fn preset(p: &Preset, nnz: u64, seed: u64, keep_dims: bool) -> Result<CooTensor> {
    if nnz == 0 {
        return Err(AltoError::InvalidArgument(
            "--nnz must be at least 1".into(),
        ));
    }
    let dims = standin_dims(p, nnz, keep_dims);
    hierarchical(&dims, nnz, p.cv_fibers_per_slice, p.cv_nnz_per_fiber, seed)
}

/// Hierarchical skewed generator over `dims` (mode 0 = slices, (mode 0, mode 1) = fibers).
pub fn hierarchical(
    dims: &[u64],
    nnz: u64,
    cv_fps: f64,
    cv_npf: f64,
    seed: u64,
) -> Result<CooTensor> {
    Layout::new(dims)?; // dims valid and within 128 bits
    for (name, cv) in [("cv_fps", cv_fps), ("cv_npf", cv_npf)] {
        check_cv(name, cv)?;
    }
    let order = dims.len();
    if order < 2 {
        return Err(AltoError::UnsupportedOrder {
            order,
            max: crate::coo::MAX_ORDER,
        });
    }
    let mut rng = Rng64::seed_from_u64(seed);
    // Popularity of ids in modes 1.. (iid weights: hot ids land at random positions).
    let popularity: Vec<Categorical> = dims
        .iter()
        .map(|&d| Categorical::new(&lognormal_weights(d as usize, 1.0, &mut rng)))
        .collect();
    let slices = Categorical::new(&lognormal_weights(dims[0] as usize, cv_fps, &mut rng));
    // About half the (slice, mode-1) cells hold a fiber, and at least one nonzero each.
    let cells = dims[0] as f64 * dims[1] as f64;
    let fibers = ((cells * 0.5).min(nnz as f64)).max(1.0) as usize;
    let per_fiber = lognormal_weights(fibers, cv_npf, &mut rng);
    let scale = nnz as f64 / per_fiber.iter().sum::<f64>();
    let mut inds: Vec<Vec<u64>> = vec![Vec::with_capacity(nnz as usize + 16); order];
    let mut vals = Vec::with_capacity(nnz as usize + 16);
    for &w in &per_fiber {
        let count = round_stochastic(w * scale, &mut rng);
        if count == 0 {
            continue;
        }
        let slice = slices.sample(&mut rng);
        let row = popularity[1].sample(&mut rng);
        for _ in 0..count {
            inds[0].push(slice);
            inds[1].push(row);
            for (m, ind) in inds.iter_mut().enumerate().skip(2) {
                ind.push(popularity[m].sample(&mut rng));
            }
            vals.push(rng.random_range(0.0..1.0));
        }
    }
    if vals.is_empty() {
        for ind in inds.iter_mut() {
            ind.push(0);
        }
        vals.push(1.0);
    }
    CooTensor::new(dims.to_vec(), inds, vals)
}

/// `nnz` nonzeros with independent uniform coordinates.
pub fn uniform(dims: &[u64], nnz: u64, seed: u64) -> Result<CooTensor> {
    Layout::new(dims)?;
    if nnz == 0 {
        return Err(AltoError::InvalidArgument(
            "--nnz must be at least 1".into(),
        ));
    }
    let mut rng = Rng64::seed_from_u64(seed);
    let inds = dims
        .iter()
        .map(|&d| (0..nnz).map(|_| rng.random_range(0..d)).collect())
        .collect();
    let vals = (0..nnz).map(|_| rng.random_range(0.0..1.0)).collect();
    CooTensor::new(dims.to_vec(), inds, vals)
}

/// An exactly rank-`rank` tensor: component r is the outer product of sparse factor columns
/// whose supports (random ids, about `(nnz / rank)^(1/N)` per mode) make the tensor hold about
/// `nnz` nonzeros. Factor entries are in [0.5, 1.5], so no cancellation creates zeros.
/// Returns the tensor (duplicates merged) and the planted factors (`I_m x rank`).
pub fn lowrank(dims: &[u64], rank: usize, nnz: u64, seed: u64) -> Result<(CooTensor, Vec<Matrix>)> {
    let layout = Layout::new(dims)?;
    if rank == 0 {
        return Err(AltoError::InvalidArgument(
            "--rank must be at least 1".into(),
        ));
    }
    if nnz == 0 {
        return Err(AltoError::InvalidArgument(
            "--nnz must be at least 1".into(),
        ));
    }
    let order = dims.len();
    let mut rng = Rng64::seed_from_u64(seed);
    let per_component = (nnz as f64 / rank as f64).max(1.0);
    let side = per_component.powf(1.0 / order as f64);
    let mut factors: Vec<Matrix> = dims
        .iter()
        .map(|&d| Matrix::zeros(d as usize, rank))
        .collect();
    let mut supports: Vec<Vec<Vec<u64>>> = Vec::with_capacity(rank);
    for r in 0..rank {
        let mut comp = Vec::with_capacity(order);
        for (m, &d) in dims.iter().enumerate() {
            let k = (round_stochastic(side, &mut rng).max(1)).min(d) as usize;
            let ids = rand::seq::index::sample(&mut rng, d as usize, k);
            let mut ids: Vec<u64> = ids.into_iter().map(|i| i as u64).collect();
            ids.sort_unstable();
            for &i in &ids {
                factors[m].set(i as usize, r, rng.random_range(0.5..1.5));
            }
            comp.push(ids);
        }
        supports.push(comp);
    }
    // Enumerate every component's support product; merge equal coordinates by summing.
    let masks = layout.masks().to_vec();
    let mut entries: Vec<(u128, f64)> = Vec::new();
    let mut coord = vec![0u64; order];
    for (r, comp) in supports.iter().enumerate() {
        let total: usize = comp.iter().map(Vec::len).product();
        for flat in 0..total {
            let mut rest = flat;
            let mut v = 1.0;
            for m in 0..order {
                let ids = &comp[m];
                coord[m] = ids[rest % ids.len()];
                rest /= ids.len();
                v *= factors[m].get(coord[m] as usize, r);
            }
            let key = coord.iter().zip(&masks).fold(0u128, |k, (&c, &mask)| {
                k | alto_kernels::index::pdep_soft_u128(c as u128, mask)
            });
            entries.push((key, v));
        }
    }
    entries.sort_unstable_by_key(|e| e.0);
    let mut inds: Vec<Vec<u64>> = vec![Vec::with_capacity(entries.len()); order];
    let mut vals: Vec<f64> = Vec::with_capacity(entries.len());
    let mut last: Option<u128> = None;
    for (key, v) in entries {
        if last == Some(key) {
            *vals.last_mut().expect("pushed with key") += v;
            continue;
        }
        last = Some(key);
        for (m, ind) in inds.iter_mut().enumerate() {
            ind.push(alto_kernels::index::pext_soft_u128(key, masks[m]) as u64);
        }
        vals.push(v);
    }
    Ok((CooTensor::new(dims.to_vec(), inds, vals)?, factors))
}

/// Counts drawn from a planted rank-`rank` Poisson model: the [`lowrank`] tensor scaled so
/// its entries average `mean`, then each entry replaced by a Poisson draw with that mean
/// (zeros dropped; entries outside every component's support have mean 0). Returns the count
/// tensor and the planted factors (the model is proportional to their CP product).
pub fn lowrank_poisson(
    dims: &[u64],
    rank: usize,
    nnz: u64,
    mean: f64,
    seed: u64,
) -> Result<(CooTensor, Vec<Matrix>)> {
    if !(mean > 0.0 && mean.is_finite() && mean < 1e12) {
        return Err(AltoError::InvalidArgument(format!(
            "--poisson must be a mean count in (0, 1e12), got {mean}"
        )));
    }
    let (model, factors) = lowrank(dims, rank, nnz, seed)?;
    let avg = model.values().iter().sum::<f64>() / model.nnz().max(1) as f64;
    let scale = mean / avg;
    let mut rng = Rng64::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut inds: Vec<Vec<u64>> = vec![Vec::with_capacity(model.nnz()); dims.len()];
    let mut vals = Vec::with_capacity(model.nnz());
    for (k, &v) in model.values().iter().enumerate() {
        let poisson = rand_distr::Poisson::new(v * scale)
            .map_err(|e| AltoError::InvalidArgument(format!("Poisson mean {}: {e}", v * scale)))?;
        let count: f64 = poisson.sample(&mut rng);
        if count > 0.0 {
            for (m, ind) in inds.iter_mut().enumerate() {
                ind.push(model.mode_indices(m)[k]);
            }
            vals.push(count);
        }
    }
    if vals.is_empty() {
        return Err(AltoError::InvalidArgument(
            "every Poisson draw was 0: raise --poisson or --nnz".into(),
        ));
    }
    Ok((CooTensor::new(dims.to_vec(), inds, vals)?, factors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_counts_follow_the_planted_support() {
        let dims = [30, 20, 10];
        let (counts, factors) = lowrank_poisson(&dims, 3, 2000, 5.0, 4).unwrap();
        let (model, _) = lowrank(&dims, 3, 2000, 4).unwrap();
        assert!(counts.nnz() > 0 && counts.nnz() <= model.nnz());
        assert!(counts
            .values()
            .iter()
            .all(|&v| v >= 1.0 && v.fract() == 0.0));
        let mean = counts.values().iter().sum::<f64>() / model.nnz() as f64;
        assert!((mean - 5.0).abs() < 0.5, "{mean}");
        // Every count lies on the planted support.
        for k in 0..counts.nnz() {
            let planted: f64 = (0..3)
                .map(|r| {
                    (0..3)
                        .map(|m| factors[m].get(counts.mode_indices(m)[k] as usize, r))
                        .product::<f64>()
                })
                .sum();
            assert!(planted > 0.0);
        }
        assert_eq!(counts, lowrank_poisson(&dims, 3, 2000, 5.0, 4).unwrap().0);
    }

    #[test]
    fn presets_are_deterministic_and_shaped() {
        let p = find_preset("NELL2").unwrap();
        let a = preset(p, 20_000, 3, false).unwrap();
        let b = preset(p, 20_000, 3, false).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, preset(p, 20_000, 4, false).unwrap());
        assert_eq!(a.order(), 3);
        let n = a.nnz() as f64;
        assert!((n - 20_000.0).abs() < 2_000.0, "{n}");
        // Short modes keep their length, long ones shrink.
        let nips = standin_dims(find_preset("nips").unwrap(), 31_016, false);
        assert_eq!(nips[3], 17);
        assert_eq!(nips[2], 140); // 14,036 scaled by 1/100
        assert_eq!(
            standin_dims(find_preset("amazon").unwrap(), 1000, true)[0],
            4_821_207
        );
        assert_eq!(PRESETS.len(), 15);
    }

    #[test]
    fn skew_follows_the_calibration() {
        // darpa's fibers per slice are far more skewed than nips'.
        let cv_of_slices = |t: &CooTensor| {
            let mut counts = vec![0f64; t.dims()[0] as usize];
            for &i in t.mode_indices(0) {
                counts[i as usize] += 1.0;
            }
            let mean = counts.iter().sum::<f64>() / counts.len() as f64;
            let var = counts.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / counts.len() as f64;
            var.sqrt() / mean
        };
        let dims = [3000, 3000, 3000];
        let skewed = hierarchical(&dims, 100_000, 13.1, 23.1, 1).unwrap();
        let flat = hierarchical(&dims, 100_000, 0.19, 0.0, 1).unwrap();
        assert!(cv_of_slices(&skewed) > 2.0 * cv_of_slices(&flat));
    }

    #[test]
    fn lowrank_is_the_sum_of_its_components() {
        let (t, f) = lowrank(&[30, 40, 20], 3, 500, 7).unwrap();
        assert!(t.nnz() > 100 && t.nnz() < 1500, "{}", t.nnz());
        for k in 0..t.nnz() {
            let c = t.coord(k);
            let want: f64 = (0..3)
                .map(|r| (0..3).map(|m| f[m].get(c[m] as usize, r)).product::<f64>())
                .sum();
            assert!((t.values()[k] - want).abs() < 1e-12);
        }
        assert!(lowrank(&[3, 3], 0, 5, 1).is_err());
    }

    #[test]
    fn uniform_within_dims() {
        let t = uniform(&[5, 6, 7, 8], 1000, 1).unwrap();
        assert_eq!(t.nnz(), 1000);
        for m in 0..4 {
            assert!(t.mode_indices(m).iter().all(|&i| i < t.dims()[m]));
        }
    }
}
