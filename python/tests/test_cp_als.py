"""CP-ALS: the fit alto reports is the model's true fit, the result is a TensorLy CP tensor,
and from the same number of iterations alto fits at least as well as
`tensorly.decomposition.parafac` (best of 3 seeds each, within FIT_TOL)."""

import threading
import time

import numpy as np
import pytest

import alto
from conftest import assert_ctrl_c_interrupts, dense_of, model_fit, on_main_thread, real_tensor

tl = pytest.importorskip("tensorly")
from tensorly.decomposition import parafac  # noqa: E402

# Absolute fit tolerance of the comparison with TensorLy: both run ALS from random starts, so
# their best-of-3 fits differ by the local optima the seeds reach, not by arithmetic.
FIT_TOL = 5e-3
SEEDS = [0, 1, 2]


def best_fits(t, rank, n_iter):
    """Best final fit of alto and of TensorLy (dense backend) over SEEDS, both from
    `n_iter` iterations (tol=0: no early stop)."""
    x = tl.tensor(dense_of(t))
    alto_best = max(
        alto.cp_als(t, rank, n_iter_max=n_iter, tol=0.0, random_state=s).fit for s in SEEDS
    )
    tl_best = -np.inf
    for s in SEEDS:
        _, errors = parafac(
            x, rank, n_iter_max=n_iter, tol=0.0, init="random", random_state=s, return_errors=True
        )
        tl_best = max(tl_best, 1.0 - float(errors[-1]))
    return alto_best, tl_best


def test_planted_low_rank():
    t, planted = alto.gen("lowrank", 6000, dims=[30, 40, 50], rank=5, seed=3, return_factors=True)
    assert [f.shape for f in planted] == [(30, 5), (40, 5), (50, 5)]
    alto_best, tl_best = best_fits(t, 5, n_iter=40)
    assert alto_best >= tl_best - FIT_TOL, (alto_best, tl_best)
    assert alto_best > 0.95, alto_best


@pytest.mark.parametrize("name,rank,n_iter", [("kinships.tns", 8, 25), ("nycflights13-4d.tns", 5, 15)])
def test_real_tensors_against_tensorly(name, rank, n_iter):
    t = alto.read_tns(real_tensor(name))
    alto_best, tl_best = best_fits(t, rank, n_iter)
    assert alto_best >= tl_best - FIT_TOL, (name, alto_best, tl_best)


@pytest.mark.parametrize(
    "name", ["kinships.tns", "openflights-routes.tns", "wikipeople-3.tns", "jf17k-4.tns", "nycflights13-4d.tns"]
)
def test_reported_fit_is_the_models_fit(name):
    # Too large to densify for TensorLy: the fit is recomputed from the model at the nonzeros.
    t = alto.read_tns(real_tensor(name))
    r = alto.cp_als(t, 6, n_iter_max=8, tol=0.0, random_state=1)
    idx, vals = t.to_coo()
    assert r.n_iter == 8 and len(r.fit_history) == 8 and len(r.iteration_times) == 8
    assert abs(model_fit(idx, vals, r.weights, r.factors) - r.fit) < 1e-8
    assert abs(r.norm_x - np.linalg.norm(vals)) < 1e-9 * r.norm_x


def test_result_is_a_tensorly_cp_tensor():
    t = alto.gen("uniform", 500, dims=[8, 9, 10], seed=1)
    r = alto.cp_als(t, 3, n_iter_max=10, random_state=0)
    weights, factors = r
    assert len(r) == 2 and r[0] is not None and len(r[1]) == 3
    assert weights.shape == (3,) and [f.shape for f in factors] == [(8, 3), (9, 3), (10, 3)]
    m = tl.cp_to_tensor(r)
    x = dense_of(t)
    assert abs((1 - np.linalg.norm(x - m) / np.linalg.norm(x)) - r.fit) < 1e-8
    cp = tl.cp_tensor.CPTensor(r)
    assert cp.rank == 3 and cp.shape == (8, 9, 10)
    assert r.to_tensorly().rank == 3
    np.testing.assert_allclose(tl.cp_to_tensor(r.to_tensorly()), m)
    assert r.rank == 3 and r.shape == (8, 9, 10) and r.n_iter == len(r.history)
    assert r.history[0]["delta_fit"] is None and r.history[0]["fit"] == r.fit_history[0]
    assert "CPResult(rank=3" in repr(r)


def test_seeds_and_init():
    t = alto.gen("uniform", 800, dims=[10, 11, 12], seed=2)
    a = alto.cp_als(t, 4, n_iter_max=5, tol=0, random_state=7)
    b = alto.cp_als(t, 4, n_iter_max=5, tol=0, random_state=7, threads=1)
    np.testing.assert_allclose(a.fit_history, b.fit_history, rtol=1e-12)
    # Warm start from a previous result (a (weights, factors) pair) and from a factor list.
    c = alto.cp_als(t, 4, n_iter_max=3, tol=0, init=a)
    d = alto.cp_als(t, 4, n_iter_max=3, tol=0, init=list(a.factors))
    np.testing.assert_allclose(c.fit_history, d.fit_history, rtol=1e-12)
    assert c.fit_history[0] >= a.fit - 1e-6
    e = alto.cp_als(t, 4, n_iter_max=3, tol=0, init=a.to_tensorly())
    np.testing.assert_allclose(c.fit_history, e.fit_history, rtol=1e-12)


def test_converges_and_verbose(capsys):
    t = alto.gen("lowrank", 3000, dims=[20, 20, 20], rank=2, seed=1)
    r = alto.cp_als(t, 2, n_iter_max=500, tol=1e-6, random_state=0, verbose=True)
    assert r.converged and r.n_iter < 500
    out = capsys.readouterr().out
    assert out.count("iteration") == r.n_iter and "fit" in out


def ticks_while(call):
    """Runs `call` on a worker thread while this thread counts 1 ms sleeps; returns the count
    and the elapsed milliseconds."""
    ticks = 0
    done = threading.Event()

    def run():
        call()
        done.set()

    worker = threading.Thread(target=run)
    start = time.perf_counter()
    worker.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    return ticks, (time.perf_counter() - start) * 1e3


def test_gil_is_released():
    # Holding the GIL, cp_als would let the main thread tick only when it hands the GIL back:
    # once per iteration and once per 50 ms signal poll, so at most iters + elapsed / 50 ticks.
    # Released, the main thread ticks about every millisecond. The run's size doubles until
    # it lasts long enough to tell the two apart, so a fast machine cannot make the test
    # vacuous (a fixed size once ran in 90 ms, too short to judge).
    iters = 10
    min_ms = 150.0
    for nnz in (2_000_000, 4_000_000, 8_000_000, 16_000_000):
        t = alto.gen("uniform", nnz, dims=[300, 400, 500], seed=1)
        ticks, elapsed_ms = ticks_while(
            lambda: alto.cp_als(t, 16, n_iter_max=iters, tol=0, random_state=0, threads=1)
        )
        if elapsed_ms >= min_ms:
            break
    assert elapsed_ms >= min_ms, f"even 16M nonzeros ran too briefly to tell ({elapsed_ms:.0f} ms)"
    held_bound = iters + elapsed_ms / 50
    assert ticks > max(3 * held_bound, elapsed_ms / 5), (ticks, elapsed_ms)


@on_main_thread
def test_ctrl_c_interrupts_between_iterations():
    assert_ctrl_c_interrupts(alto.cp_als)
