"""CP-APR (`alto.cp_apr`): the log-likelihood after every outer iteration is that of the NumPy
reference `tests/apr_reference.py` from the same initial factors (to 1e-8 relative, for every
Phi kernel), it never decreases, the result is a TensorLy CP tensor, and bad input raises."""

import re

import numpy as np
import pytest

import alto
from conftest import REPO, apr_reference, assert_ctrl_c_interrupts, on_main_thread, real_tensor

DIMS = (24, 18, 12)
RANK = 3


def counts(seed=5, dims=DIMS, rank=RANK, nnz=1500):
    """A count tensor drawn from a planted rank-`rank` Poisson model at `nnz` random
    coordinates (duplicates summed), every value at least 1."""
    rng = np.random.default_rng(seed)
    idx = np.stack([rng.integers(0, d, nnz) for d in dims], axis=1)
    planted = [rng.random((d, rank)) for d in dims]
    rate = np.ones((nnz, rank))
    for n, u in enumerate(planted):
        rate *= u[idx[:, n]]
    rate = rate.sum(axis=1)
    vals = 1.0 + rng.poisson(6.0 * rate / rate.mean())
    return alto.SparseTensor.from_coo(idx, vals, dims)


def random_init(seed=3, dims=DIMS, rank=RANK):
    rng = np.random.default_rng(seed)
    return [rng.random((d, rank)) for d in dims]


@pytest.mark.parametrize(
    "kernel,sync,threads",
    [("auto", "auto", 2), ("fused", "atomic", 2), ("cached", "pull", 2), ("scalar", "auto", 1)],
)
def test_trajectory_matches_numpy(kernel, sync, threads):
    t = counts()
    subs, vals = t.to_coo()
    U = random_init()
    ref = apr_reference()
    theirs = ref.cp_apr(subs, vals, U, 25, 10, 1e-4, 0.01, 1e-10, 1e-10)
    r = alto.cp_apr(t, RANK, n_iter_max=25, init=U, threads=threads, kernel=kernel, sync=sync)
    assert r.n_iter == len(theirs) == len(r.loglik_history) == len(r.kkt_history)
    np.testing.assert_allclose(r.loglik_history, theirs, rtol=1e-8, atol=0)
    assert r.loglik == r.loglik_history[-1]
    assert len(r.phi_kernels) == 3
    if kernel in ("fused", "cached"):
        assert all(k.endswith("_" + kernel) for k in r.phi_kernels), r.phi_kernels
    # The inputs are copied, not normalized in place.
    np.testing.assert_array_equal(U[0], random_init()[0])


def test_options_reach_the_fit():
    t = counts(seed=8)
    subs, vals = t.to_coo()
    U = random_init(seed=4)
    ref = apr_reference()
    theirs = ref.cp_apr(subs, vals, U, 12, 3, 1e-6, 0.05, 1e-8, 1e-9)
    r = alto.cp_apr(
        t, RANK, n_iter_max=12, inner=3, tol=1e-6, kappa=0.05, kappa_tol=1e-8, epsilon=1e-9,
        init=U,
    )
    np.testing.assert_allclose(r.loglik_history, theirs, rtol=1e-8, atol=0)
    assert all(s <= 3 * 3 for s in r.inner_iters)


def nondecreasing(ll):
    ll = np.asarray(ll)
    return np.all(np.diff(ll) >= -1e-12 * np.abs(ll[1:])), np.diff(ll).min()


def test_loglik_never_decreases():
    t = counts(seed=11, nnz=4000)
    r = alto.cp_apr(t, 4, n_iter_max=200, random_state=0)
    ok, worst = nondecreasing(r.loglik_history)
    assert ok, worst
    assert r.n_iter > 5 and r.loglik_history[-1] > r.loglik_history[0]


def test_loglik_never_decreases_on_a_real_tensor():
    t = alto.read_tns(real_tensor("kinships.tns"))
    r = alto.cp_apr(t, 5, n_iter_max=40, random_state=1)
    ok, worst = nondecreasing(r.loglik_history)
    assert ok, worst


def test_negative_value_raises():
    idx = np.array([[0, 0, 0], [1, 2, 3], [2, 1, 0]])
    t = alto.SparseTensor.from_coo(idx, np.array([1.0, -2.5, 3.0]), (3, 3, 4))
    with pytest.raises(ValueError, match=r"nonnegative counts.*negative value -2\.5"):
        alto.cp_apr(t, 1)
    # The index the message names is that of to_coo().
    msg = ""
    try:
        alto.cp_apr(t, 1)
    except ValueError as e:
        msg = str(e)
    k = int(re.search(r"nonzero (\d+) of to_coo", msg).group(1))
    assert t.to_coo()[1][k] == -2.5


def test_bad_options_raise():
    t = counts()
    bad = [
        (dict(rank=0), "rank: must be at least 1"),
        (dict(rank=-2), "rank: must be at least 1, got -2"),
        (dict(rank=10_000), "rank: 10000 is larger than makes sense"),
        (dict(n_iter_max=0), "n_iter_max: must be at least 1"),
        (dict(n_iter_max=-1), "n_iter_max: must be at least 1, got -1"),
        (dict(inner=0), "inner: must be at least 1"),
        (dict(tol=-1.0), "tol: must be a finite number >= 0"),
        (dict(kappa=float("nan")), "kappa: must be a finite number >= 0"),
        (dict(kappa_tol=-1e-3), "kappa_tol: must be a finite number >= 0"),
        (dict(epsilon=0.0), "epsilon: must be a finite number > 0"),
        (dict(kernel="nonsense"), "kernel: unknown Phi kernel `nonsense`"),
        (dict(sync="sometimes"), "sync:"),
        (dict(random_state=-1), "random_state must be >= 0"),
        (dict(threads=0), "threads must be at least 1"),
        (dict(init="svd"), "init: unknown initialization `svd`"),
        (dict(init=[np.ones((24, 3)), np.ones((18, 3))]), "init: 2 factor matrices"),
        (dict(init=[np.ones((24, 3)), np.ones((17, 3)), np.ones((12, 3))]),
         "init: factor 1 is 17 x 3, expected 18 x 3"),
        (dict(init=[np.ones((24, 3)), -np.ones((18, 3)), np.ones((12, 3))]),
         "init: factor 1 holds a negative or non-finite value"),
        (dict(init=(np.ones(2), [np.ones((d, 3)) for d in DIMS])), "init: 2 weights for rank 3"),
        (dict(init=(-np.ones(3), [np.ones((d, 3)) for d in DIMS])),
         "init: the weights must be finite and nonnegative"),
    ]
    for kwargs, match in bad:
        rank = kwargs.pop("rank", RANK)
        with pytest.raises(ValueError, match=re.escape(match)):
            alto.cp_apr(t, rank, n_iter_max=kwargs.pop("n_iter_max", 2), **kwargs)
    with pytest.raises(TypeError):
        alto.cp_apr("not a tensor", 1)
    with pytest.raises(TypeError):
        alto.cp_apr(t, RANK, 10)  # the options are keyword-only


def test_result_is_a_tensorly_cp_tensor():
    tl = pytest.importorskip("tensorly")
    t = counts()
    r = alto.cp_apr(t, RANK, n_iter_max=10, random_state=0)
    weights, factors = r
    assert len(r) == 2 and len(r[1]) == 3 and r[-2] is not None
    np.testing.assert_array_equal(r[0], weights)
    with pytest.raises(IndexError, match="APRResult index 2 out of range"):
        r[2]
    assert weights.shape == (RANK,) and [f.shape for f in factors] == [(d, RANK) for d in DIMS]
    assert weights.dtype == np.float64 and all(f.dtype == np.float64 for f in factors)
    assert np.all(weights >= 0) and all(np.all(f >= 0) for f in factors)
    for f in factors:
        np.testing.assert_allclose(f.sum(axis=0), 1.0, rtol=1e-12)
    m = tl.cp_to_tensor(r)
    dense = np.einsum("r,ir,jr,kr->ijk", weights, *factors)
    np.testing.assert_allclose(m, dense, rtol=1e-12)
    cp = tl.cp_tensor.CPTensor(r)
    assert cp.rank == RANK and cp.shape == DIMS
    np.testing.assert_allclose(tl.cp_to_tensor(r.to_tensorly()), m)
    assert r.rank == RANK and r.shape == DIMS and r.n_iter == len(r.history) == 10
    # The model's log-likelihood, recomputed from the result at the nonzeros.
    subs, vals = t.to_coo()
    at = np.einsum("r,xr,xr,xr->x", weights, *[f[subs[:, n]] for n, f in enumerate(factors)])
    assert abs(np.sum(vals * np.log(at)) - weights.sum() - r.loglik) < 1e-9 * abs(r.loglik)
    assert "APRResult(rank=3, shape=(24, 18, 12), n_iter=10" in repr(r)


def test_history_matches_the_command_json_entries():
    # The keys of `iterations[]` of `alto cpd --model apr --json` are AprIterStats's fields.
    src = (REPO / "src" / "cpd" / "apr" / "model.rs").read_text()
    body = re.search(r"pub struct AprIterStats \{(.*?)\n\}", src, re.S).group(1)
    fields = re.findall(r"pub (\w+):", body)
    assert "loglik" in fields and "kkt" in fields
    r = alto.cp_apr(counts(), RANK, n_iter_max=4, tol=0, random_state=2)
    assert [list(h) for h in r.history] == [fields] * 4
    for k, h in enumerate(r.history):
        assert h["iter"] == k and h["loglik"] == r.loglik_history[k]
        assert h["kkt"] == r.kkt_history[k] and h["inner_iters"] == r.inner_iters[k]
        assert h["seconds"] == r.iteration_times[k] and h["phi_seconds"] == r.phi_times[k]
        assert h["seconds"] >= h["phi_seconds"] >= 0


def test_seeds_and_warm_starts():
    t = counts(seed=9)
    a = alto.cp_apr(t, RANK, n_iter_max=8, tol=0, random_state=7)
    b = alto.cp_apr(t, RANK, n_iter_max=8, tol=0, random_state=7, threads=1)
    np.testing.assert_allclose(a.loglik_history, b.loglik_history, rtol=1e-12)
    c = alto.cp_apr(t, RANK, n_iter_max=8, tol=0, random_state=8)
    assert c.loglik_history != a.loglik_history
    # init=None and init="random" draw the same factors from random_state.
    d = alto.cp_apr(t, RANK, n_iter_max=8, tol=0, random_state=7, init="random")
    np.testing.assert_allclose(a.loglik_history, d.loglik_history, rtol=1e-12)
    # A warm start from a result continues from that very model: the weights are folded into
    # the first factor, so the pair, the CPTensor and the folded factor list agree.
    e = alto.cp_apr(t, RANK, n_iter_max=3, tol=0, init=a)
    f = alto.cp_apr(
        t, RANK, n_iter_max=3, tol=0, init=[a.factors[0] * a.weights, a.factors[1], a.factors[2]]
    )
    np.testing.assert_allclose(e.loglik_history, f.loglik_history, rtol=1e-12)
    assert e.loglik_history[0] >= a.loglik - 1e-12 * abs(a.loglik)
    tl = pytest.importorskip("tensorly")
    g = alto.cp_apr(t, RANK, n_iter_max=3, tol=0, init=a.to_tensorly())
    np.testing.assert_allclose(e.loglik_history, g.loglik_history, rtol=1e-12)
    del tl


def test_converges_and_verbose(capsys):
    t = counts(seed=2, dims=(15, 15, 15), rank=2, nnz=2000)
    r = alto.cp_apr(t, 2, n_iter_max=1000, tol=1e-3, random_state=0, verbose=True)
    assert r.converged and r.n_iter < 1000
    assert r.kkt_history[-1] < 1e-3
    out = capsys.readouterr().out
    assert out.count("iteration") == r.n_iter and "log-likelihood" in out
    capped = alto.cp_apr(t, 2, n_iter_max=3, tol=0, random_state=0)
    assert not capped.converged and capped.n_iter == 3


@on_main_thread
def test_ctrl_c_interrupts_between_iterations():
    assert_ctrl_c_interrupts(alto.cp_apr)
