"""Shared helpers of the alto Python tests: the dense and einsum oracles and the real tensors."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

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
