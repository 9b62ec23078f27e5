//! The distributed MTTKRP simulated in one process: P segments of the globally sorted line,
//! one [`LocalBlock`] each, partial rows summed through the exchange plans exactly as the MPI
//! driver lays out its buffers. Checked against the library's single-process MTTKRP.

use crate::block::{
    pack_owned_for_windows, reduce_recv_counts, reduce_send_layout, sum_into_owned, LocalBlock,
};
use crate::codec::KeyCodec;
use crate::plan::{owned_bounds, segment_bounds, ExchangePlan};
use crate::sample::sort_and_merge;
use alto::cpd::initial_factors;
use alto::format::{BuildOptions, Layout};
use alto::mttkrp::{mttkrp, MttkrpOptions, Workspace};
use alto::{AnyAlto, CooTensor, Matrix};

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap()
}

/// Every mode's MTTKRP through `parts` simulated ranks, assembled from the owned blocks.
fn simulated_mttkrp(coo: &CooTensor, parts: usize, factors: &[Matrix]) -> Vec<Matrix> {
    let rank = factors[0].cols();
    let layout = Layout::new(coo.dims()).unwrap();
    let codec = KeyCodec::new(&layout);
    let mut keys: Vec<u128> = (0..coo.nnz())
        .map(|k| codec.encode(coo.coord(k).into_iter()))
        .collect();
    let mut vals = coo.values().to_vec();
    sort_and_merge(&mut keys, &mut vals);
    let bounds = segment_bounds(keys.len() as u64, parts);
    let blocks: Vec<LocalBlock> = (0..parts)
        .map(|p| {
            let r = bounds[p] as usize..bounds[p + 1] as usize;
            LocalBlock::from_segment(&codec, &keys[r.clone()], &vals[r], 2).unwrap()
        })
        .collect();
    let pool = pool();
    let mut out = Vec::new();
    for mode in 0..coo.order() {
        let dim = coo.dims()[mode];
        let intervals: Vec<_> = blocks.iter().map(|b| b.intervals[mode]).collect();
        let owned = owned_bounds(&intervals, dim);
        let plans: Vec<_> = (0..parts)
            .map(|p| ExchangePlan::new(p, &intervals, &owned))
            .collect();
        // Each rank's partial rows of its window.
        let partials: Vec<Vec<f64>> = blocks
            .iter()
            .map(|b| {
                let windows: Vec<Matrix> = (0..coo.order())
                    .map(|m| b.window_of(&factors[m], m))
                    .collect();
                let w = b.window(mode);
                let mut y = Matrix::zeros((w.end - w.start) as usize, rank);
                if let Some(t) = &b.tensor {
                    let mut ws = Workspace::new(t, rank);
                    let opts = MttkrpOptions::default();
                    b.partial_mttkrp(&windows, mode, &mut y, &opts, &mut ws, &pool)
                        .unwrap();
                }
                y.into_vec()
            })
            .collect();
        // The alltoallv: rank q receives, by source p, p's send piece for q.
        let mut full = Matrix::zeros(dim as usize, rank);
        for q in 0..parts {
            let mut received = Vec::new();
            for p in 0..parts {
                let (counts, displs) = reduce_send_layout(&plans[p], rank);
                let (c, d) = (counts[q] as usize, displs[q] as usize);
                received.extend_from_slice(&partials[p][d..d + c]);
            }
            let want: u64 = reduce_recv_counts(&plans[q], rank).iter().sum();
            assert_eq!(received.len() as u64, want);
            let o = &plans[q].owned;
            let mut owned_rows = vec![0.0; (o.end - o.start) as usize * rank];
            sum_into_owned(&plans[q], &received, &mut owned_rows, rank);
            full.as_mut_slice()[o.start as usize * rank..o.end as usize * rank]
                .copy_from_slice(&owned_rows);
        }
        // The reverse direction rebuilds every window from the owners' rows.
        for p in 0..parts {
            let mut window = Vec::new();
            for plan in &plans {
                let o = &plan.owned;
                let owned_rows = &full.as_slice()[o.start as usize * rank..o.end as usize * rank];
                let (buf, counts) = pack_owned_for_windows(plan, owned_rows, rank);
                let before: u64 = counts[..p].iter().sum();
                window.extend_from_slice(&buf[before as usize..(before + counts[p]) as usize]);
            }
            let w = blocks[p].window(mode);
            assert_eq!(
                window,
                full.as_slice()[w.start as usize * rank..w.end as usize * rank]
            );
        }
        out.push(full);
    }
    out
}

fn check(coo: &CooTensor, parts: usize, rank: usize) {
    let factors = initial_factors(coo.dims(), rank, 5);
    let got = simulated_mttkrp(coo, parts, &factors);
    let (t, _) = AnyAlto::build(
        coo,
        &BuildOptions {
            partitions: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let pool = pool();
    let mut ws = Workspace::new(&t, rank);
    for (mode, g) in got.iter().enumerate() {
        let mut want = Matrix::zeros(coo.dims()[mode] as usize, rank);
        mttkrp(
            &t,
            &factors,
            mode,
            &mut want,
            &Default::default(),
            &mut ws,
            &pool,
        )
        .unwrap();
        let scale = want
            .as_slice()
            .iter()
            .fold(1e-300f64, |a, x| a.max(x.abs()));
        let err = g.max_abs_diff(&want) / scale;
        assert!(err <= 1e-12, "P={parts} mode {mode}: relative error {err}");
    }
}

#[test]
fn simulated_ranks_match_single_process_mttkrp() {
    let coo = alto::gen::uniform(&[40, 300, 7], 3000, 1).unwrap();
    for parts in [1, 2, 3, 4, 7] {
        check(&coo, parts, 5);
    }
}

#[test]
fn seventy_bit_index_and_tiny_tensors() {
    let wide = alto::gen::uniform(&[16384; 5], 400, 2).unwrap();
    assert_eq!(Layout::new(wide.dims()).unwrap().total_bits(), 70);
    check(&wide, 3, 4);
    // Fewer nonzeros than twice the ranks: some segments are empty.
    let tiny = alto::gen::uniform(&[5, 6, 7], 5, 3).unwrap();
    for parts in [2, 3, 4, 8] {
        check(&tiny, parts, 3);
    }
}
