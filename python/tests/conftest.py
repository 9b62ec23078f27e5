"""Shared helpers of the alto Python tests: the dense and einsum oracles and the real tensors."""

import importlib.util
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import alto

# The repository's sibling folder, as the Rust tests find it: `../shared/data/real`.
REPO = Path(__file__).resolve().parents[2]
REAL = REPO / ".." / "shared" / "data" / "real"


def real_tensor(name):
    """The path of a real `.tns` tensor, or a skip (with the reason) when it is absent."""
    path = REAL / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (../shared/data/real beside the repository)")
    return path


def apr_reference():
    """The NumPy CP-APR reference `tests/apr_reference.py` of the Rust tests, as a module
    (`cp_apr(subs, vals, U, iters, inner, tol, kappa, kappa_tol, eps)` returns the
    log-likelihood after every outer iteration from the initial factors U)."""
    spec = importlib.util.spec_from_file_location(
        "apr_reference", REPO / "tests" / "apr_reference.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def dense(indices, values, shape):
    """The dense array of 0-based `(nnz, N)` coordinates, duplicates summed."""
    x = np.zeros(shape)
    np.add.at(x, tuple(np.asarray(indices).T), values)
    return x


def dense_of(t):
    """The dense array of an `alto.SparseTensor`."""
    idx, vals = t.to_coo()
    return dense(idx, vals, t.shape)


def einsum_mttkrp(x, factors, mode):
    """MTTKRP by einsum over the dense tensor: the naive oracle."""
    letters = "abcdefgh"[: x.ndim]
    others = [m for m in range(x.ndim) if m != mode]
    spec = letters + "," + ",".join(letters[m] + "z" for m in others)
    return np.einsum(spec + "->" + letters[mode] + "z", x, *[factors[m] for m in others])


def model_fit(x_indices, x_values, weights, factors):
    """`1 - ||X - M|| / ||X||` of a CP model M against a sparse X, without densifying:
    `||X - M||^2 = ||X||^2 - 2 <X, M> + ||M||^2`, `<X, M>` summed over the nonzeros and
    `||M||^2 = w^T (hadamard of the Grams) w`."""
    rows = np.ones((len(x_values), len(weights)))
    for m, u in enumerate(factors):
        rows *= u[x_indices[:, m]]
    inner = x_values @ (rows @ weights)
    gram = np.ones((len(weights), len(weights)))
    for u in factors:
        gram *= u.T @ u
    norm_m = weights @ gram @ weights
    norm_x = x_values @ x_values
    return 1.0 - np.sqrt(max(norm_x - 2.0 * inner + norm_m, 0.0)) / np.sqrt(norm_x)


# Ctrl-C reaches Python's handler on the main thread only.
on_main_thread = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="signals"
)


def assert_ctrl_c_interrupts(fit):
    """`fit` on a 200k-nonzero tensor: a SIGINT half a second in raises `KeyboardInterrupt`
    between iterations. `fit(t, rank, **kw)` is `alto.cp_als` or `alto.cp_apr`.

    Bounded whatever the environment: Python's own handler is installed for the test (a
    process started with SIGINT ignored, as a background job of a non-interactive shell is,
    has none, and the signal would be dropped), and the run is sized from a timed short run
    to stop by itself after about 20 s, so a lost interrupt fails the test instead of hanging
    it."""
    t = alto.gen("uniform", 200_000, dims=[300, 400, 500], seed=1)
    start = time.perf_counter()
    fit(t, 16, n_iter_max=3, tol=0, random_state=0)
    per_iter = max((time.perf_counter() - start) / 3, 1e-4)
    n_iter = max(int(20.0 / per_iter), 100)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        start = time.perf_counter()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            fit(t, 16, n_iter_max=n_iter, tol=0, random_state=0)
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.perf_counter() - start < 30
