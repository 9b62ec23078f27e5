//! Measured explanations of where this run departs from the paper (figures 6, 11 and 12,
//! whose headline ratios miss it here), and the experiments that would test them. Each line
//! is computed from the measurements, never written by hand; an explanation the data cannot
//! support is left out rather than asserted.

use super::*;
use alto::format::{bits_for_dim, IndexWidth};
use alto::harness::topology::{human_bytes, Topology};

/// The sizes of the stand-ins against the paper's tensors: geometric mean of
/// `stand-in nonzeros / paper nonzeros`.
fn size_fraction(data: &[TensorData]) -> Option<String> {
    let standins: Vec<(u64, u64)> = data
        .iter()
        .filter_map(|t| t.info.paper_nnz.map(|p| (t.info.nnz, p)))
        .collect();
    let fractions: Vec<f64> = standins.iter().map(|&(n, p)| n as f64 / p as f64).collect();
    geomean(&fractions).map(|g| {
        format!(
            "Scale: the {} stand-ins hold a geometric mean of {:.2}% of their paper tensors' \
             nonzeros ({} to {} nonzeros here).",
            fractions.len(),
            100.0 * g,
            standins.iter().map(|s| s.0).min().unwrap_or(0),
            standins.iter().map(|s| s.0).max().unwrap_or(0)
        )
    })
}

/// ALTO's speedup over the best mode-agnostic format on one tensor at `threads` and the
/// run's ISA.
fn agnostic_speedup(td: &TensorData, threads: usize) -> Option<f64> {
    let alto = time_of(td, Format::Alto, threads, None).ok()?;
    let best = [Format::Coo, Format::HicooSb10, Format::HicooSb14]
        .into_iter()
        .filter_map(|f| time_of(td, f, threads, None).ok())
        .fold(f64::INFINITY, f64::min);
    (best.is_finite() && alto > 0.0).then(|| best / alto)
}

/// `"1.50x at 1 thread (20 tensors), 2.08x at 2 threads (20 tensors)"`, over the thread
/// counts with measurements.
fn by_threads(ctx: &Ctx, ratio: impl Fn(usize) -> Vec<f64>) -> String {
    ctx.threads
        .iter()
        .map(|&t| (t, ratio(t)))
        .filter(|(_, r)| !r.is_empty())
        .map(|(t, r)| {
            format!(
                "{} at {t} thread{} ({} tensors)",
                times(geomean(&r)),
                if t == 1 { "" } else { "s" },
                r.len()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// This machine's data caches as the topology reports them (`L2 1 MiB, L3 480 MiB`); a
/// virtual machine may report its host's last-level cache, not this guest's share of it.
fn reported_caches() -> String {
    match Topology::detect() {
        Ok(topo) => {
            let levels: Vec<String> = (1..=4)
                .filter_map(|l| {
                    topo.data_cache_bytes(l)
                        .map(|b| format!("L{l} {}", human_bytes(b)))
                })
                .collect();
            if levels.is_empty() {
                "none reported".into()
            } else {
                levels.join(", ")
            }
        }
        Err(e) => format!("unknown ({e})"),
    }
}

/// Bytes MTTKRP streams or reuses on one tensor: ALTO's footprint, every factor matrix and the
/// output (at most the largest mode's rows).
fn working_set(td: &TensorData, ctx: &Ctx) -> Option<u64> {
    let alto = td.get(Variant::Alto, ctx.max_threads())?.storage_bytes?;
    let rows: u64 = td.info.dims.iter().sum::<u64>() + td.info.dims.iter().max().unwrap_or(&0);
    Some(alto + rows * ctx.opts.rank as u64 * 8)
}

/// Figure 6's gap: how ALTO's speedup over the best mode-agnostic format moves with the thread
/// count, with cache fit and with the ISA (`isa_line`, computed by the figure).
pub fn fig06(data: &[TensorData], ctx: &Ctx, isa_line: &str) -> Gap {
    let mut evidence = vec![format!(
        "Core count: ALTO over the best mode-agnostic format (same ISA, geometric mean) is {}; \
         the paper's 8x is at 112 threads on 56 cores.",
        by_threads(ctx, |t| data
            .iter()
            .filter_map(|td| agnostic_speedup(td, t))
            .collect())
    )];
    // Split by working set rather than by the reported cache size, which a VM may inflate.
    let t = ctx.max_threads();
    let mut sized: Vec<(u64, f64)> = data
        .iter()
        .filter_map(|td| Some((working_set(td, ctx)?, agnostic_speedup(td, t)?)))
        .collect();
    sized.sort_by_key(|x| x.0);
    let (small, large) = sized.split_at(sized.len() / 2);
    if let (Some(edge), false) = (small.last(), large.is_empty()) {
        let speedups = |h: &[(u64, f64)]| h.iter().map(|x| x.1).collect::<Vec<_>>();
        evidence.push(format!(
            "Cache fit: on the {} tensors with the smaller working sets (ALTO's footprint, the \
             factor matrices and the output at rank {}: up to {}) ALTO's speedup is {}; on the \
             {} larger ones (up to {}), {} (at {t} threads). This machine's caches as reported: \
             {}.",
            small.len(),
            ctx.opts.rank,
            human_bytes(edge.0),
            times(geomean(&speedups(small))),
            large.len(),
            human_bytes(large.last().map_or(0, |x| x.0)),
            times(geomean(&speedups(large))),
            reported_caches()
        ));
    }
    evidence.extend(size_fraction(data));
    evidence.push(isa_line.to_string());
    Gap {
        evidence,
        experiments: vec![
            scale_experiment("fig06"),
            "The same figure with `--threads 1,2,4,8,16,32,56,112` on a 56-core Xeon Platinum \
             8280 (the paper's machine): the thread trend above, extended to the paper's core \
             count."
                .into(),
        ],
    }
}

/// Figure 12's gap: how ALTO's construction speedup over HiCOO moves with the thread count and
/// the tensor size.
pub fn fig12(data: &[TensorData], ctx: &Ctx) -> Gap {
    let over_hicoo = |td: &TensorData, t: usize| -> Option<f64> {
        let alto = build_of(td, Format::Alto, t).ok()?;
        let hicoo = [Format::HicooSb10, Format::HicooSb14]
            .into_iter()
            .filter_map(|f| build_of(td, f, t).ok())
            .fold(f64::INFINITY, f64::min);
        (hicoo.is_finite() && alto > 0.0).then(|| hicoo / alto)
    };
    let mut evidence = vec![format!(
        "Core count: ALTO's construction speedup over the faster HiCOO (geometric mean) is {}.",
        by_threads(ctx, |t| data
            .iter()
            .filter_map(|td| over_hicoo(td, t))
            .collect())
    )];
    let t = ctx.max_threads();
    let sized = by_size(data);
    let (small, large) = sized.split_at(sized.len() / 2);
    let half =
        |h: &[&TensorData]| -> Vec<f64> { h.iter().filter_map(|td| over_hicoo(td, t)).collect() };
    if !small.is_empty() && !large.is_empty() {
        evidence.push(format!(
            "Size: on the smaller half of the tensors (up to {} nonzeros) the speedup is {}; \
             on the larger half, {} (at {t} threads).",
            small.last().map_or(0, |td| td.info.nnz),
            times(geomean(&half(small))),
            times(geomean(&half(large)))
        ));
    }
    let rate = |f: Format| -> Vec<f64> {
        data.iter()
            .filter_map(|td| {
                build_of(td, f, t)
                    .ok()
                    .map(|s| td.info.nnz as f64 / s / 1e6)
            })
            .collect()
    };
    evidence.push(format!(
        "Baselines' quality: this HiCOO builds at {:.1} M nonzeros/s and ALTO at {:.1} M/s \
         (geometric means at {t} threads); HiCOO here sorts one packed integer key per nonzero \
         (superblock, then Morton order) with rayon's parallel sort, as ALTO sorts its \
         linearized index, where the paper measured ParTI's construction.",
        geomean(&rate(Format::HicooSb10)).unwrap_or(f64::NAN),
        geomean(&rate(Format::Alto)).unwrap_or(f64::NAN)
    ));
    evidence.extend(size_fraction(data));
    Gap {
        evidence,
        experiments: vec![
            scale_experiment("fig12"),
            "ParTI's own HiCOO construction timed on the same tensors (not part of this \
             repository): the paper's >10x is against that implementation."
                .into(),
        ],
    }
}

/// Figure 11's gap: CSF over ALTO, split into what CSF's leaves cost (one id and one value per
/// nonzero in each of its N trees), what its upper levels add, and what ALTO's index width
/// would be on the paper's tensor rather than on its smaller stand-in.
pub fn fig11(data: &[TensorData], ctx: &Ctx, paper_tensors: &[&str]) -> Gap {
    let t = ctx.max_threads();
    let mut leaves = Vec::new();
    let mut widths = Vec::new();
    for td in by_size(data) {
        if !paper_tensors.contains(&td.info.name.as_str()) {
            continue;
        }
        let (Ok(csf), Ok(alto)) = (
            storage_of(td, Format::Csf, t),
            storage_of(td, Format::Alto, t),
        ) else {
            continue;
        };
        let nnz = td.info.nnz.max(1) as f64;
        let order = td.info.order as f64;
        let (csf_pn, alto_pn) = (csf as f64 / nnz, alto as f64 / nnz);
        // Every tree keeps a 64-bit id and a 64-bit value per nonzero at its leaves.
        let leaf_pn = 16.0 * order;
        leaves.push(format!(
            "{} ({} trees): CSF {csf_pn:.1} B/nnz = leaves {leaf_pn:.0} + upper levels {:.1} \
             ({:.0}%), ALTO {alto_pn:.1} B/nnz; leaves alone {:.2}x ALTO",
            td.info.name,
            td.info.order,
            csf_pn - leaf_pn,
            100.0 * (csf_pn - leaf_pn) / csf_pn,
            leaf_pn / alto_pn
        ));
        let word = |bits: u32| IndexWidth::for_bits(bits).map(IndexWidth::bytes).ok();
        let paper = alto::gen::find_preset(&td.info.name)
            .map(|p| p.dims.iter().map(|&d| bits_for_dim(d)).sum::<u32>());
        if let (Some(paper_bits), Some(here)) = (paper, word(td.info.index_bits)) {
            if let Some(there) = word(paper_bits).filter(|&w| w != here) {
                let repriced = alto_pn + there as f64 - here as f64;
                widths.push(format!(
                    "{}: {paper_bits}-bit index on the paper's tensor ({there}-byte words), {} \
                     bits on the stand-in ({here}-byte words); at the paper's width CSF/ALTO \
                     here would be {:.2}x",
                    td.info.name,
                    td.info.index_bits,
                    csf_pn / repriced
                ));
            }
        }
    }
    let mut evidence = Vec::new();
    if !leaves.is_empty() {
        evidence.push(format!(
            "Leaves vs. upper levels (64-bit ids and pointers, as SPLATT's default): {}. \
             Where the leaves alone fall in the paper's 2.5x-4.5x, the excess is the upper \
             levels: fiber nodes per nonzero, which fall as fibers grow longer (the scale \
             study below measures whether they do as the stand-ins grow).",
            leaves.join("; ")
        ));
    }
    if !widths.is_empty() {
        evidence.push(format!("Index width: {}.", widths.join("; ")));
    }
    evidence.extend(size_fraction(data));
    Gap {
        evidence,
        experiments: vec![scale_experiment("fig11")],
    }
}

/// The scale study that tests the size explanation (its results, where run, are tabulated in
/// `SUMMARY.md`).
fn scale_experiment(figure: &str) -> String {
    format!(
        "`cargo run --release -p alto-experiments --bin {figure} -- --scale S --tensors \
         {} --reports reports/gap/scaleS` for S = 4 and 16: whether the ratio moves toward \
         the paper's as the stand-ins grow toward the paper's sizes.",
        SCALE_STUDY_TENSORS.join(",")
    )
}

/// The tensors of the scale study (one high-reuse, one limited-reuse; both fit in memory at
/// `--scale 16`).
pub const SCALE_STUDY_TENSORS: [&str; 2] = ["nips", "darpa"];
