//! `alto info`: what the format makes of a tensor.

use super::{load, print_out, LoadArgs, Outcome, PoolArgs};
use alto::format::fiber_reuse;
use alto::mttkrp::choose_sync;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// A `.tns` or `.alto` file.
    pub file: PathBuf,
    #[command(flatten)]
    pub load: LoadArgs,
    // --threads (also the segment count) and --pin.
    #[command(flatten)]
    pub pool: PoolArgs,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
pub struct ModeInfo {
    pub mode: usize,
    pub dim: u64,
    pub bits: u32,
    pub mask: String,
    pub fiber_reuse: u64,
    pub strategy: String,
    pub flag_bit: Option<u32>,
}

#[derive(Serialize)]
pub struct InfoReport {
    pub file: String,
    pub order: usize,
    pub dims: Vec<u64>,
    pub nnz: usize,
    pub duplicates_merged: u64,
    pub total_bits: u32,
    pub index_width: &'static str,
    pub partitions: usize,
    pub min_fiber_reuse: u64,
    pub modes: Vec<ModeInfo>,
    pub alto_bytes: u64,
    pub coo_bytes: u64,
    pub compression_vs_coo: f64,
    pub parse_seconds: Option<f64>,
    pub parse_mb_per_s: Option<f64>,
    pub build_seconds: Option<alto::format::BuildTimes>,
}

pub fn run(a: InfoArgs) -> Result<Outcome> {
    let threads = a.pool.threads()?;
    let (pool, _) = a.pool.build()?;
    let l = load(&a.file, &a.load, threads, &pool)?;
    let t = &l.alto;
    let layout = t.layout();
    let hex_digits = (layout.width().bits() / 4) as usize;
    let modes = (0..t.order())
        .map(|m| {
            let reuse = fiber_reuse(t.nnz() as u64, t.dims()[m]);
            ModeInfo {
                mode: m,
                dim: t.dims()[m],
                bits: layout.bits()[m],
                mask: format!("0x{:0w$x}", layout.masks()[m], w = hex_digits),
                fiber_reuse: reuse,
                strategy: choose_sync(reuse, t.min_fiber_reuse(), t.flag_bit(m).is_some())
                    .to_string(),
                flag_bit: t.flag_bit(m),
            }
        })
        .collect();
    // COO with 64-bit indices, as the paper compares (eq. 2).
    let coo_bytes = t.nnz() as u64 * (t.order() as u64 * 8 + 8);
    let r = InfoReport {
        file: a.file.display().to_string(),
        order: t.order(),
        dims: t.dims().to_vec(),
        nnz: t.nnz(),
        duplicates_merged: t.duplicates_merged(),
        total_bits: layout.total_bits(),
        index_width: layout.width().name(),
        partitions: t.num_partitions(),
        min_fiber_reuse: t.min_fiber_reuse(),
        modes,
        alto_bytes: t.storage_bytes(),
        coo_bytes,
        compression_vs_coo: coo_bytes as f64 / t.storage_bytes() as f64,
        parse_seconds: l.parse_s,
        parse_mb_per_s: l.parse_s.map(|s| l.file_bytes as f64 / 1e6 / s),
        build_seconds: l.build,
    };
    if a.json {
        print_out(&(serde_json::to_string_pretty(&r)? + "\n"))?;
    } else {
        print_out(&render(&r))?;
    }
    Ok(Outcome::Success)
}

fn render(r: &InfoReport) -> String {
    let mut s = String::new();
    let dims: Vec<String> = r.dims.iter().map(|d| d.to_string()).collect();
    let _ = writeln!(s, "file        {}", r.file);
    let _ = writeln!(s, "order       {}", r.order);
    let _ = writeln!(s, "dims        {}", dims.join(" x "));
    let _ = writeln!(
        s,
        "nonzeros    {} ({} duplicates merged)",
        r.nnz, r.duplicates_merged
    );
    let _ = writeln!(
        s,
        "index       {} bits in a {} word, {} partitions",
        r.total_bits, r.index_width, r.partitions
    );
    let _ = writeln!(
        s,
        "storage     ALTO {} B vs COO (64-bit) {} B: {:.2}x smaller",
        r.alto_bytes, r.coo_bytes, r.compression_vs_coo
    );
    if let (Some(p), Some(mbs)) = (r.parse_seconds, r.parse_mb_per_s) {
        let _ = writeln!(s, "parse       {:.3} s ({:.0} MB/s)", p, mbs);
    }
    if let Some(b) = &r.build_seconds {
        // Older builds (and `.alto` files' records) may report encoding inside the sort.
        let encode_sort = if b.encode > 0.0 {
            format!("encode {:.3}, sort {:.3}", b.encode, b.sort)
        } else {
            format!("encode+sort {:.3}", b.sort)
        };
        let _ = writeln!(
            s,
            "build       {:.3} s ({encode_sort}, merge {:.3}, partition {:.3}, flags {:.3})",
            b.total, b.merge, b.partition, b.flags
        );
    }
    let _ = writeln!(
        s,
        "\nmode  dim          bits  mask                                 reuse     strategy  flag"
    );
    for m in &r.modes {
        let flag = m.flag_bit.map_or("-".to_string(), |b| b.to_string());
        let _ = writeln!(
            s,
            "{:<5} {:<12} {:<5} {:<36} {:<9} {:<9} {}",
            m.mode, m.dim, m.bits, m.mask, m.fiber_reuse, m.strategy, flag
        );
    }
    let _ = writeln!(s, "(strategy: pull when reuse > {}, else flagged atomics when a flag bit is free, else atomics)", r.min_fiber_reuse);
    s
}
