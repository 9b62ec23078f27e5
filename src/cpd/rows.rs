//! Row kernels of the CP-ALS update (`u = y W` with the Gram, `g += u u^T`, column scaling):
//! the `#[target_feature]` code lives in [`alto_kernels::rows`]; this module re-exports its
//! API under the library's `cpd::rows` path and tests it against `nalgebra`.

pub use alto_kernels::rows::{RowIsa, RowKernel, SPECIALIZED_RANKS, SUB_ROWS};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Matrix;
    use alto_kernels::Avx2Fma;

    /// Every kernel this CPU can run for `rank`, with a note for the ones it cannot.
    fn kernels(rank: usize) -> Vec<RowKernel> {
        let mut v = Vec::new();
        for isa in [RowIsa::Portable, RowIsa::Avx2Fma] {
            if !isa.available() {
                eprintln!("skipping {}: not available on this CPU", isa.name());
                continue;
            }
            for spec in [true, false] {
                let k = RowKernel::new(isa, rank, spec).expect("available");
                if !v.contains(&k) {
                    v.push(k);
                }
            }
        }
        v
    }

    /// An SPD system `A^T A + I` and its inverse (row-major).
    fn spd(r: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let a = Matrix::random(r + 3, r, seed);
        let mut v = vec![0.0; r * r];
        RowKernel::new(RowIsa::Portable, r, false)
            .expect("portable runs everywhere")
            .gram_block(a.as_slice(), &mut v);
        for j in 0..r {
            v[j * r + j] += 1.0;
        }
        let inv = nalgebra::DMatrix::from_row_slice(r, r, &v)
            .try_inverse()
            .expect("SPD");
        let inv = (0..r * r).map(|k| inv[(k / r, k % r)]).collect();
        (v, inv)
    }

    #[test]
    fn every_kernel_solves_grams_and_scales_like_the_naive_code() {
        for rank in [1, 3, 8, 16, 17, 32, 64] {
            let (v, inv) = spd(rank, rank as u64);
            for rows in [1, 2, 3, 4, 5, 9, 37, 70] {
                let y = Matrix::random(rows, rank, 100 + rows as u64);
                let y = y.as_slice();
                // Naive: u = y V^-1; Gram and max by definition.
                let mut want = vec![0.0; rows * rank];
                for i in 0..rows {
                    for j in 0..rank {
                        want[i * rank + j] =
                            (0..rank).map(|k| y[i * rank + k] * inv[k * rank + j]).sum();
                    }
                }
                let mut want_g = vec![0.0; rank * rank];
                for i in 0..rows {
                    for a in 0..rank {
                        for b in 0..rank {
                            want_g[a * rank + b] += want[i * rank + a] * want[i * rank + b];
                        }
                    }
                }
                let scale: Vec<f64> = (0..rank).map(|j| 0.5 + j as f64).collect();
                for k in kernels(rank) {
                    let mut u = vec![f64::NAN; rows * rank];
                    let mut g = vec![1.0; rank * rank]; // accumulates onto what is there
                    let mut cm = vec![0.0; rank];
                    k.solve_block(&inv, y, &mut u, &mut g, Some(&mut cm));
                    let tol = 1e-10;
                    for (a, b) in u.iter().zip(&want) {
                        assert!(
                            (a - b).abs() <= tol * (1.0 + b.abs()),
                            "{} {a} {b}",
                            k.name()
                        );
                    }
                    // V u^T = y^T row by row.
                    for i in 0..rows {
                        for a in 0..rank {
                            let vu: f64 =
                                (0..rank).map(|b| v[a * rank + b] * u[i * rank + b]).sum();
                            assert!((vu - y[i * rank + a]).abs() < 1e-9, "{}", k.name());
                        }
                    }
                    for (a, b) in g.iter().zip(&want_g) {
                        assert!((a - 1.0 - b).abs() <= tol * (1.0 + b.abs()), "{}", k.name());
                    }
                    for j in 0..rank {
                        let m = (0..rows).map(|i| u[i * rank + j].abs()).fold(0.0, f64::max);
                        assert_eq!(cm[j], m, "{}", k.name());
                    }
                    // Gram alone.
                    let mut g2 = vec![0.0; rank * rank];
                    k.gram_block(&u, &mut g2);
                    for (a, b) in g2.iter().zip(&g) {
                        assert!((a + 1.0 - b).abs() <= tol * (1.0 + b.abs()), "{}", k.name());
                    }
                    // Scaling, with and without the inner product.
                    let mut us = u.clone();
                    let mut acc = vec![0.25; rank];
                    k.scale_block(&scale, &mut us, y, Some(&mut acc));
                    for j in 0..rank {
                        let mut want_acc = 0.25;
                        for i in 0..rows {
                            let x = u[i * rank + j] * scale[j];
                            assert_eq!(us[i * rank + j], x, "{}", k.name());
                            want_acc += x * y[i * rank + j];
                        }
                        assert!((acc[j] - want_acc).abs() < 1e-12 * (1.0 + want_acc.abs()));
                    }
                    let mut us2 = u.clone();
                    k.scale_block(&scale, &mut us2, &[], None);
                    assert_eq!(us2, us, "{}", k.name());
                }
            }
        }
    }

    #[test]
    fn parse_names() {
        assert_eq!(RowKernel::parse("auto", 16), Ok(None));
        let k = RowKernel::parse("portable_r16", 16).unwrap().unwrap();
        assert_eq!(k.name(), "portable_r16");
        let k = RowKernel::parse("portable", 17).unwrap().unwrap();
        assert_eq!(k.name(), "portable_rdyn");
        assert_eq!(
            RowKernel::parse("portable_rdyn", 16)
                .unwrap()
                .unwrap()
                .name(),
            "portable_rdyn"
        );
        assert!(RowKernel::parse("portable_r8", 16).is_err());
        assert!(RowKernel::parse("portable_r17", 17).is_err());
        assert!(RowKernel::parse("sse9", 16).is_err());
        assert_eq!(
            RowKernel::parse("avx2fma", 16).is_ok(),
            RowIsa::Avx2Fma.available()
        );
    }

    #[test]
    fn names_and_selection() {
        let k = RowKernel::new(RowIsa::Portable, 16, true).unwrap();
        assert_eq!(k.name(), "portable_r16");
        assert_eq!(
            RowKernel::new(RowIsa::Portable, 16, false).unwrap().name(),
            "portable_rdyn"
        );
        assert_eq!(
            RowKernel::new(RowIsa::Portable, 17, true).unwrap().name(),
            "portable_rdyn"
        );
        let best = RowKernel::best(16);
        assert!(best.isa().available());
        if Avx2Fma::try_new().is_some() {
            assert_eq!(best.name(), "avx2fma_r16");
        } else {
            assert!(RowKernel::new(RowIsa::Avx2Fma, 16, true).is_none());
        }
    }
}

/// A timing ladder of the row kernels (run with `--ignored --nocapture` in release):
/// nanoseconds per row of each pass, L1/L2-resident blocks, best of several trials.
#[cfg(test)]
mod ladder {
    use super::*;
    use crate::matrix::Matrix;
    use std::time::Instant;

    #[test]
    #[ignore = "timing only"]
    fn row_kernel_ladder() {
        let rank = 16;
        let rows = 1024;
        let a = Matrix::random(rows, rank, 1);
        let y = Matrix::random(rows, rank, 2);
        let mut v = vec![0.0; rank * rank];
        RowKernel::new(RowIsa::Portable, rank, false)
            .expect("portable runs everywhere")
            .gram_block(a.as_slice(), &mut v);
        let inv = nalgebra::DMatrix::from_row_slice(rank, rank, &v)
            .try_inverse()
            .unwrap();
        let w: Vec<f64> = (0..rank * rank)
            .map(|k| inv[(k / rank, k % rank)])
            .collect();
        let mut u = vec![0.0; rows * rank];
        let mut g = vec![0.0; rank * rank];
        let mut cm = vec![0.0; rank];
        let scale = vec![0.5; rank];
        let mut acc = vec![0.0; rank];
        let time = |f: &mut dyn FnMut()| {
            let mut best = f64::INFINITY;
            for _ in 0..20 {
                let t = Instant::now();
                for _ in 0..20 {
                    f();
                }
                best = best.min(t.elapsed().as_secs_f64() / 20.0);
            }
            best * 1e9 / rows as f64
        };
        for isa in [RowIsa::Portable, RowIsa::Avx2Fma] {
            for spec in [false, true] {
                let Some(k) = RowKernel::new(isa, rank, spec) else {
                    eprintln!("skipping {}: not available", isa.name());
                    continue;
                };
                let solve =
                    time(&mut || k.solve_block(&w, y.as_slice(), &mut u, &mut g, Some(&mut cm)));
                let gram = time(&mut || k.gram_block(&u, &mut g));
                let sc = time(&mut || k.scale_block(&scale, &mut u, y.as_slice(), Some(&mut acc)));
                eprintln!(
                    "{:<16} solve+gram+max {solve:6.1} ns/row   gram {gram:6.1}   scale+inner {sc:6.1}",
                    k.name()
                );
            }
        }
    }
}
