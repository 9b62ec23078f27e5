"""alto `cp_als` vs TensorLy `parafac`: time per CP-ALS iteration, same rank and iteration
count, on one real tensor and one synthetic one. A benchmark, not a test.

    python3 python/bench/bench_cp_als.py [--rank 10] [--iters 10] [--reps 3]

TensorLy runs on its NumPy backend over the dense tensor (its BLAS uses every CPU) and, where
the `sparse` package is installed, on `tensorly.contrib.sparse` over a `sparse.COO` tensor
(after a warm-up that compiles its numba kernels; being far slower, for `--sparse-iters`
iterations and one seed).
alto runs on the sparse tensor at 1 thread and at every CPU. Per-iteration times are medians:
alto's from `CPResult.iteration_times`, TensorLy's from the gaps between its per-iteration
`callback` calls; the fastest seed's median is printed with the best final fit over the seeds
(tol=0 runs of the same length), so a fast wrong answer would show.
"""

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import alto

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / ".." / "shared" / "data" / "real" / "nycflights13-4d.tns"


def dense_of(t):
    idx, vals = t.to_coo()
    x = np.zeros(t.shape)
    x[tuple(idx.T)] = vals
    return x, idx, vals


def alto_row(t, rank, iters, reps, threads):
    """(fastest median seconds per iteration, best fit) over `reps` seeds."""
    times, fits = [], []
    for rep in range(reps):
        r = alto.cp_als(t, rank, n_iter_max=iters, tol=0.0, random_state=rep, threads=threads)
        times.append(statistics.median(r.iteration_times))
        fits.append(r.fit)
    return min(times), max(fits)


def tensorly_row(x, rank, iters, reps, parafac, tl):
    """(fastest median seconds per iteration, best fit) over `reps` seeds."""
    times, fits = [], []
    for rep in range(reps):
        stamps = []

        def callback(_cp, _err):
            stamps.append(time.perf_counter())

        start = time.perf_counter()
        _, errors = parafac(
            x, rank, n_iter_max=iters, tol=0.0, init="random", random_state=rep,
            return_errors=True, callback=callback,
        )
        # The first callback comes after initialization (before the first iteration).
        gaps = np.diff(stamps) if len(stamps) > 1 else [time.perf_counter() - start]
        times.append(float(np.median(gaps)))
        fits.append(1.0 - float(tl.to_numpy(errors[-1])))
    return min(times), max(fits)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rank", type=int, default=10)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sparse-iters", type=int, default=3,
                    help="iterations of the (slow) contrib.sparse runs, one seed")
    a = ap.parse_args()

    import tensorly as tl
    from tensorly.decomposition import parafac

    try:
        import sparse
        from tensorly.contrib.sparse.decomposition import parafac as sparse_parafac
    except ImportError:
        sparse = None

    if sparse is not None:
        # Compile sparse's numba kernels before anything is timed.
        tiny = sparse.COO(np.array([[0, 1], [1, 0], [0, 1]]), np.array([1.0, 2.0]), shape=(2, 2, 2))
        sparse_parafac(tiny, 1, n_iter_max=2, init="random", random_state=0)

    cases = []
    if REAL.is_file():
        cases.append(("nycflights13-4d (real)", alto.read_tns(REAL)))
    else:
        print(f"skipping the real tensor: {REAL} is absent")
    cases.append((
        "skewed 200x300x400, 200k nnz (synthetic)",
        alto.gen("skewed", 200_000, dims=[200, 300, 400], seed=1),
    ))
    cpus = os.cpu_count() or 1
    print(f"machine: {cpu_model()}, {cpus} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"python {platform.python_version()}, numpy {np.__version__}, tensorly {tl.__version__}")
    print(f"rank {a.rank}, {a.iters} iterations (tol=0), best of {a.reps} seeds\n")
    print("| tensor | nnz | implementation | ms / iteration | best fit |")
    print("|---|---|---|---|---|")
    for name, t in cases:
        x, idx, vals = dense_of(t)
        rows = [
            ("alto cp_als, 1 thread", alto_row(t, a.rank, a.iters, a.reps, 1)),
            (f"alto cp_als, {cpus} threads", alto_row(t, a.rank, a.iters, a.reps, cpus)),
            ("tensorly parafac (NumPy, dense)",
             tensorly_row(tl.tensor(x), a.rank, a.iters, a.reps, parafac, tl)),
        ]
        if sparse is not None:
            xs = sparse.COO(idx.T, vals, shape=t.shape)
            rows.append((f"tensorly parafac (contrib.sparse, {a.sparse_iters} iterations)",
                         tensorly_row(xs, a.rank, a.sparse_iters, 1, sparse_parafac, tl)))
        else:
            rows.append(("tensorly parafac (contrib.sparse)", None))
        for impl, res in rows:
            if res is None:
                print(f"| {name} | {t.nnz} | {impl} | not installed (`pip install sparse`) | |")
            else:
                print(f"| {name} | {t.nnz} | {impl} | {res[0] * 1e3:.2f} | {res[1]:.4f} |")


if __name__ == "__main__":
    main()
