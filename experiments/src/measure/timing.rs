//! Building one format and timing its MTTKRP on every mode, each warm-up result checked against
//! the oracle.

use super::cache::{Entry, ModeTime, Stamp, Status, CACHE_VERSION};
use super::stats::max_relative_error;
use super::{Build, Engine, Need, Variant};
use crate::formats::{Baseline, BaselineOptions, CooSync};
use crate::tensors::TensorSpec;
use alto::dispatch::KernelChoice;
use alto::format::{AnyAlto, BuildOptions};
use alto::harness::record::min_median_max;
use alto::mttkrp::{mttkrp, mttkrp_oracle, MttkrpOptions, Workspace};
use alto::{AltoError, CooTensor, Matrix};
use alto_kernels::{KernelId, RankSpec};
use anyhow::Result;
use indicatif::ProgressBar;
use std::time::Instant;

/// State while measuring one tensor: its factors and the oracle results, computed lazily.
pub(super) struct TensorRun<'a> {
    engine: &'a Engine<'a>,
    coo: &'a CooTensor,
    factors: Vec<Matrix>,
    oracle: Vec<Option<Matrix>>,
    /// The backend `--pin` binds with here, asked once.
    pin_backend: String,
}

impl<'a> TensorRun<'a> {
    pub(super) fn new(engine: &'a Engine<'a>, _spec: &TensorSpec, coo: &'a CooTensor) -> Self {
        let rank = engine.ctx.opts.rank;
        let factors = coo
            .dims()
            .iter()
            .enumerate()
            .map(|(m, &d)| Matrix::random(d as usize, rank, engine.ctx.opts.seed * 1000 + m as u64))
            .collect();
        TensorRun {
            engine,
            coo,
            factors,
            oracle: vec![None; coo.order()],
            pin_backend: engine.ctx.pin_backend(),
        }
    }

    fn oracle(&mut self, mode: usize) -> Result<&Matrix> {
        if self.oracle[mode].is_none() {
            self.oracle[mode] = Some(mttkrp_oracle(self.coo, &self.factors, mode)?);
        }
        Ok(self.oracle[mode].as_ref().expect("just computed"))
    }

    /// Builds `b` once at the pool's thread count and measures every need of `group` on it
    /// (whatever its ISA: building does not depend on the kernels' ISA); the entries come back
    /// in `group`'s order.
    pub(super) fn measure_build(
        &mut self,
        b: Build,
        group: &[Need],
        pool: &rayon::ThreadPool,
        bar: &ProgressBar,
    ) -> Result<Vec<Entry>> {
        let threads = pool.current_num_threads();
        let rank = self.engine.ctx.opts.rank;
        bar.set_message(format!("building {} t={threads}", build_name(b)));
        let built = match b {
            Build::Baseline(kind) => {
                Baseline::build(kind, self.coo, pool).map(|(f, s)| (Built::Baseline(f), s))
            }
            Build::Alto => pool
                .install(|| {
                    AnyAlto::build(
                        self.coo,
                        &BuildOptions {
                            partitions: threads,
                            ..Default::default()
                        },
                    )
                })
                .map(|(a, times)| (Built::Alto(a), times.total)),
        };
        bar.inc(group.len() as u64);
        let (format, build_s) = match built {
            Ok(x) => x,
            Err(e) => {
                let status = classify(&e);
                let ctx = self.engine.ctx;
                return Ok(group
                    .iter()
                    .map(|n| {
                        Entry::failed(
                            n,
                            rank,
                            status.clone(),
                            e.to_string(),
                            n.isa_run(ctx).to_string(),
                            Stamp::now(ctx, &self.pin_backend),
                        )
                    })
                    .collect());
            }
        };
        let storage = format.storage_bytes();
        let ctx = self.engine.ctx;
        let mut out = Vec::new();
        for n in group {
            let mut e = Entry {
                version: CACHE_VERSION,
                variant: n.variant,
                threads,
                rank,
                status: Status::Ok,
                reason: None,
                build_s: Some(build_s),
                storage_bytes: Some(storage),
                modes: Vec::new(),
                max_rel_err: None,
                timed: n.timed,
                isa: n.isa_run(ctx).to_string(),
                isa_key: n.isa.name().to_string(),
                stamp: Stamp::now(ctx, &self.pin_backend),
            };
            if n.timed {
                if let Err((status, why)) = self.time_variant(&format, n, pool, bar, &mut e) {
                    e.status = status;
                    e.reason = Some(why);
                    e.modes.clear();
                }
            }
            out.push(e);
        }
        Ok(out)
    }

    /// Times every mode of `need`'s variant on `format` with `need`'s ISA (every ALTO variant
    /// runs that ISA's kernels; the baselines the matching ISA), filling `e.modes` and
    /// `e.max_rel_err`.
    fn time_variant(
        &mut self,
        format: &Built,
        need: &Need,
        pool: &rayon::ThreadPool,
        bar: &ProgressBar,
        e: &mut Entry,
    ) -> std::result::Result<(), (Status, String)> {
        let ctx = self.engine.ctx;
        let opts = &ctx.opts;
        let (v, isa) = (need.variant, need.isa);
        let rank = opts.rank;
        let threads = pool.current_num_threads();
        let order = self.coo.order();
        let alto_opts = match v {
            Variant::AltoRankFixed => match RankSpec::best_for(rank) {
                RankSpec::Fixed(r) => Some(MttkrpOptions {
                    kernel: KernelChoice::Named(KernelId {
                        isa,
                        rank: RankSpec::Fixed(r),
                    }),
                    ..Default::default()
                }),
                RankSpec::Tiled | RankSpec::Dynamic => {
                    return Err((
                        Status::Unsupported,
                        format!("no kernel is specialized for rank {rank}"),
                    ))
                }
            },
            Variant::AltoRankDynamic => Some(MttkrpOptions {
                kernel: KernelChoice::Named(KernelId {
                    isa,
                    rank: RankSpec::Dynamic,
                }),
                ..Default::default()
            }),
            // The default options, but the kernel `auto` bound to this ISA (the library's
            // default would be the best ISA whatever `ALTO_ISA` says).
            _ => Some(MttkrpOptions {
                kernel: KernelChoice::Isa(isa),
                ..Default::default()
            }),
        };
        let base_opts = BaselineOptions {
            isa: ctx.baseline_isa_at(isa),
            coo_sync: if v == Variant::CooPrivatized {
                CooSync::Privatized
            } else {
                CooSync::Atomic
            },
            ..Default::default()
        };
        let mut ws = match format {
            Built::Alto(a) => Some(Workspace::new(a, rank)),
            Built::Baseline(_) => None,
        };
        let mut max_err = 0.0f64;
        for mode in 0..order {
            bar.set_message(format!("{} t={threads} mode {}", v.name(), mode + 1));
            let rows = self.coo.dims()[mode] as usize;
            let mut y = Matrix::zeros(rows, rank);
            self.oracle(mode)
                .map_err(|err| (Status::Failed, format!("oracle: {err}")))?;
            let mut call = |y: &mut Matrix| -> alto::Result<String> {
                match format {
                    Built::Alto(a) => {
                        let o = alto_opts.as_ref().expect("set for ALTO variants");
                        let ws = ws.as_mut().expect("ALTO workspace");
                        mttkrp(a, &self.factors, mode, y, o, ws, pool).map(|r| r.name)
                    }
                    Built::Baseline(f) => f
                        .mttkrp(&self.factors, mode, y, &base_opts, pool)
                        .map(str::to_string),
                }
            };
            // Warm-up, checked against the oracle.
            let ran = call(&mut y).map_err(|err| (classify(&err), err.to_string()))?;
            let want = self.oracle[mode]
                .as_ref()
                .expect("computed before the closure");
            let err = max_relative_error(&y, want);
            max_err = max_err.max(err);
            if err.is_nan() || err > 1e-9 {
                return Err((
                    Status::Failed,
                    format!("mode {mode}: result differs from the oracle (relative error {err:e})"),
                ));
            }
            let mut times = Vec::new();
            let mut spent = 0.0;
            let cap = (opts.reps * 50).max(200);
            while times.len() < opts.reps || (spent < opts.min_seconds && times.len() < cap) {
                let t = Instant::now();
                call(&mut y).map_err(|err| (Status::Failed, err.to_string()))?;
                let s = t.elapsed().as_secs_f64();
                spent += s;
                times.push(s);
            }
            let (min_s, median_s, max_s) = min_median_max(&times);
            e.modes.push(ModeTime {
                mode,
                reps: times.len(),
                min_s,
                median_s,
                max_s,
                ran,
            });
            bar.inc(1);
        }
        e.max_rel_err = Some(max_err);
        Ok(())
    }
}

enum Built {
    Baseline(Baseline),
    Alto(AnyAlto),
}

impl Built {
    /// The full footprint, counted the same way for every format: every array the format
    /// keeps to run MTTKRP (indices, values, pointers, schedules, partition metadata).
    fn storage_bytes(&self) -> u64 {
        match self {
            Built::Baseline(b) => b.storage_bytes(),
            Built::Alto(a) => alto_footprint_bytes(a),
        }
    }
}

/// ALTO's full footprint: the library's `storage_bytes` (one index word and one value per
/// nonzero) plus what it leaves out: the per-mode bit masks and flag positions, the partition
/// bounds (one `usize` per partition and one more) and the partition intervals (a closed
/// `(u64, u64)` per partition and mode).
pub fn alto_footprint_bytes(a: &AnyAlto) -> u64 {
    let word = u64::from(a.width().bits() / 8);
    let (order, parts) = (a.order() as u64, a.num_partitions() as u64);
    let usize_bytes = std::mem::size_of::<usize>() as u64;
    let flag_bytes = std::mem::size_of::<Option<u32>>() as u64;
    a.storage_bytes() + order * (word + flag_bytes) + (parts + 1) * usize_bytes + parts * order * 16
}

fn build_name(b: Build) -> &'static str {
    match b {
        Build::Baseline(k) => k.name(),
        Build::Alto => "ALTO",
    }
}

/// Maps a library error to how the figures report it.
pub fn classify(e: &AltoError) -> Status {
    match e {
        AltoError::OutOfMemory { .. } => Status::OutOfMemory,
        AltoError::UnsupportedOrder { .. }
        | AltoError::TooManyBits { .. }
        | AltoError::InvalidArgument(_) => Status::Unsupported,
        _ => Status::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alto_footprint_counts_partition_metadata() {
        let coo = CooTensor::new(
            vec![4, 5, 6],
            vec![vec![0, 1, 3], vec![0, 4, 2], vec![5, 0, 1]],
            vec![1.0, 2.0, 3.0],
        )
        .unwrap();
        let build = |partitions| {
            AnyAlto::build(
                &coo,
                &BuildOptions {
                    partitions,
                    ..Default::default()
                },
            )
            .unwrap()
            .0
        };
        let (one, two) = (build(1), build(2));
        // 3 nonzeros of a 32-bit index and a value; 3 masks and flag positions; bounds; intervals.
        let meta_one = 3 * (4 + 8) + 2 * 8 + 3 * 16;
        assert_eq!(alto_footprint_bytes(&one), 3 * (4 + 8) + meta_one);
        // A second partition adds one bound and one interval per mode.
        assert_eq!(
            alto_footprint_bytes(&two) - alto_footprint_bytes(&one),
            8 + 3 * 16
        );
    }

    #[test]
    fn errors_are_classified() {
        assert_eq!(
            classify(&AltoError::UnsupportedOrder { order: 9, max: 8 }),
            Status::Unsupported
        );
        assert_eq!(
            classify(&AltoError::InvalidArgument("x".into())),
            Status::Unsupported
        );
    }
}
