//! Construction-sort timing: the radix sort against the parallel comparison sort on the same
//! (index, value) pairs, random keys of a given width, each sort run on a fresh copy (so page
//! faults of the input are outside the timing), median of `--reps`.
//!
//! ```sh
//! cargo run --release --example sort_perf -- [--n 10000000] [--bits 51] [--threads 1] [--reps 5]
//! ```

use alto::format::sort::{comparison_sort_pairs, radix_sort_pairs};
use alto::harness::pool::build_pool;
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// A sort under test, run inside the pool.
type SortFn<'a> = dyn Fn(&mut Vec<(u64, f64)>) + Sync + 'a;

fn main() -> anyhow::Result<()> {
    let (mut n, mut bits, mut threads, mut reps) = (10_000_000usize, 51u32, 1usize, 5usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .ok_or_else(|| anyhow::anyhow!("{a} needs a value"))
        };
        match a.as_str() {
            "--n" => n = val()?.parse()?,
            "--bits" => bits = val()?.parse()?,
            "--threads" => threads = val()?.parse()?,
            "--reps" => reps = val()?.parse()?,
            other => anyhow::bail!("unknown option `{other}` (--n, --bits, --threads, --reps)"),
        }
    }
    if !(1..=64).contains(&bits) {
        anyhow::bail!("--bits must be in 1..=64 (u64 keys), got {bits}");
    }
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let pairs: Vec<(u64, f64)> = (0..n)
        .map(|k| (rng.random::<u64>() & mask, k as f64))
        .collect();
    let pool = build_pool(threads)?;
    let mut want = pairs.clone();
    want.sort_by_key(|p| p.0);
    let time = |name: &str, f: &SortFn<'_>| {
        let mut ts = Vec::new();
        for _ in 0..reps {
            let mut v = pairs.clone();
            let t = Instant::now();
            pool.install(|| f(&mut v));
            ts.push(t.elapsed().as_secs_f64());
            assert!(
                v.iter().map(|p| p.0).eq(want.iter().map(|p| p.0)),
                "{name} did not sort"
            );
        }
        ts.sort_by(f64::total_cmp);
        let med = ts[ts.len() / 2];
        println!(
            "{name:<11} n {n} bits {bits} threads {threads}: median {:.1} ms ({:.1} ns/pair)",
            med * 1e3,
            med * 1e9 / n as f64
        );
        med
    };
    let r = time("radix", &|v| radix_sort_pairs(v, bits));
    let c = time("comparison", &|v| comparison_sort_pairs(v));
    println!("radix is {:.2}x faster", c / r);
    Ok(())
}
