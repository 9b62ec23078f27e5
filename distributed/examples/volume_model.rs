//! Prints the README's model table: bytes per CP-ALS iteration (all modes, R = 16) for the
//! largest FROSTT tensors at P = 2 .. 1024 ranks, for ALTO's interval exchange under uniform
//! nonzeros (the grid its line cut induces), SPLATT's medium-grained grid, and a whole-matrix
//! allreduce. Run: `cargo run -p alto-mpi --example volume_model`.

use alto::format::Layout;
use alto_mpi::volume::{allreduce_bytes, alto_grid, grid_exchange_bytes, splatt_grid};

const RANK: usize = 16;

fn main() {
    let tensors: [(&str, &[u64]); 5] = [
        ("nell-1", &[2_902_330, 2_143_368, 25_495_389]),
        ("delicious", &[532_924, 17_262_471, 2_480_308, 1_443]),
        ("amazon-reviews", &[4_821_207, 1_774_269, 1_805_187]),
        ("patents", &[46, 239_172, 239_172]),
        ("reddit-2015", &[8_211_298, 176_962, 8_116_559]),
    ];
    println!("| tensor | P | ALTO grid | ALTO GB/iter | SPLATT grid | SPLATT GB/iter | allreduce GB/iter |");
    println!("|---|---|---|---|---|---|---|");
    for (name, dims) in tensors {
        let layout = Layout::new(dims).expect("FROSTT dims fit 128 bits");
        for k in [1u32, 2, 4, 6, 8, 10] {
            let p = 1u64 << k;
            let ag = alto_grid(&layout, p);
            let sg = splatt_grid(dims, p);
            // Partial rows to their owners, then updated rows back: twice the reduce volume.
            let alto: u64 = dims
                .iter()
                .zip(&ag)
                .map(|(&d, &g)| 2 * grid_exchange_bytes(d, g, p, RANK))
                .sum();
            let splatt: u64 = dims
                .iter()
                .zip(&sg)
                .map(|(&d, &g)| 2 * grid_exchange_bytes(d, g, p, RANK))
                .sum();
            let whole: u64 = dims
                .iter()
                .map(|&d| allreduce_bytes(d, RANK, p as usize))
                .sum();
            let gb = |b: u64| format!("{:.2}", b as f64 / 1e9);
            let grid = |g: &[u64]| {
                g.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            };
            println!(
                "| {name} | {p} | {} | {} | {} | {} | {} |",
                grid(&ag),
                gb(alto),
                grid(&sg),
                gb(splatt),
                gb(whole)
            );
        }
    }
}
