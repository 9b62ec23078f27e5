"""MTTKRP against the einsum oracle: orders 2-5, odd ranks (and 16, a specialized kernel),
every mode, every strategy, 1 and 2 threads, and every input layout the bindings take."""

import numpy as np
import pytest

import alto
from conftest import dense, dense_of, einsum_mttkrp, real_tensor

RANKS = [1, 3, 7, 16, 17, 33]


def random_case(order, rank, seed, nnz=300):
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(2, 10, size=order))
    idx = np.stack([rng.integers(0, d, size=nnz) for d in shape], axis=1)
    vals = rng.standard_normal(nnz)
    factors = [rng.standard_normal((d, rank)) for d in shape]
    return shape, idx, vals, factors


def assert_close(y, ref):
    # Each entry sums at most nnz products of N terms: a few ulps per term of its absolute sum.
    scale = max(np.abs(ref).max(), 1.0)
    np.testing.assert_allclose(y, ref, rtol=1e-11, atol=1e-12 * scale)


@pytest.mark.parametrize("order", [2, 3, 4, 5])
@pytest.mark.parametrize("rank", RANKS)
def test_every_mode_matches_einsum(order, rank):
    shape, idx, vals, factors = random_case(order, rank, seed=order * 1000 + rank)
    t = alto.SparseTensor.from_coo(idx, vals, shape, threads=2)
    x = dense(idx, vals, shape)
    for mode in range(order):
        y = t.mttkrp(factors, mode)
        assert y.shape == (shape[mode], rank) and y.dtype == np.float64
        assert_close(y, einsum_mttkrp(x, factors, mode))


@pytest.mark.parametrize("sync", ["auto", "pull", "atomic", "flagged"])
@pytest.mark.parametrize("threads", [1, 2])
def test_every_strategy_and_thread_count(sync, threads):
    shape, idx, vals, factors = random_case(3, 5, seed=7, nnz=2000)
    t = alto.SparseTensor.from_coo(idx, vals, shape, threads=threads)
    x = dense(idx, vals, shape)
    for mode in range(3):
        y = t.mttkrp(factors, mode, threads=threads, sync=sync, kernel="auto")
        assert_close(y, einsum_mttkrp(x, factors, mode))


def test_named_kernels():
    shape, idx, vals, factors = random_case(3, 16, seed=3)
    t = alto.SparseTensor.from_coo(idx, vals, shape)
    x = dense(idx, vals, shape)
    for kernel in ["scalar", "scalar_rdyn", "scalar_r16", "pull_scalar_r16"]:
        assert_close(t.mttkrp(factors, 1, kernel=kernel), einsum_mttkrp(x, factors, 1))


def test_input_layouts_and_dtypes():
    shape, idx, vals, factors = random_case(4, 3, seed=11)
    x = dense(idx, vals, shape)
    ref = einsum_mttkrp(x, factors, 2)
    # (N, nnz) coordinates, unsigned and narrow index dtypes, float32 and integer values.
    for indices in [idx, idx.T, np.ascontiguousarray(idx.T), idx.astype(np.uint32), idx.astype(np.int16)]:
        t = alto.SparseTensor.from_coo(indices, vals, shape)
        assert_close(t.mttkrp(factors, 2), ref)
    # Read-only inputs are read in place and left as they were.
    ro_idx, ro_vals = idx.copy(), vals.copy()
    ro_idx.setflags(write=False)
    ro_vals.setflags(write=False)
    t = alto.SparseTensor.from_coo(ro_idx, ro_vals, list(shape))
    np.testing.assert_array_equal(ro_idx, idx)
    assert_close(t.mttkrp(factors, 2), ref)
    # Fortran-ordered, strided and float32 factors are copied (converted) once.
    assert_close(t.mttkrp([np.asfortranarray(f) for f in factors], 2), ref)
    wide = [np.repeat(f, 2, axis=1)[:, ::2] for f in factors]
    assert_close(t.mttkrp(wide, 2), ref)
    f32 = [f.astype(np.float32) for f in factors]
    assert_close(t.mttkrp(f32, 2), einsum_mttkrp(x, [f.astype(np.float64) for f in f32], 2))
    ints = np.arange(len(vals)) % 5
    ti = alto.SparseTensor.from_coo(idx, ints, shape)
    assert_close(ti.mttkrp(factors, 0), einsum_mttkrp(dense(idx, ints, shape), factors, 0))


def test_duplicates_are_summed():
    idx = np.array([[0, 1], [0, 1], [2, 0]])
    t = alto.SparseTensor.from_coo(idx, [1.0, 2.0, 5.0], (3, 2))
    assert t.nnz == 2
    u = [np.ones((3, 1)), np.array([[10.0], [100.0]])]
    np.testing.assert_array_equal(t.mttkrp(u, 0), [[300.0], [0.0], [50.0]])


def test_matches_tensorly_unfolding_dot_khatri_rao():
    tl = pytest.importorskip("tensorly")
    from tensorly.tenalg import unfolding_dot_khatri_rao

    shape, idx, vals, factors = random_case(3, 4, seed=5)
    t = alto.SparseTensor.from_coo(idx, vals, shape)
    x = tl.tensor(dense(idx, vals, shape))
    for mode in range(3):
        assert_close(t.mttkrp(factors, mode), unfolding_dot_khatri_rao(x, (None, factors), mode))


def test_output_owns_its_buffer():
    shape, idx, vals, factors = random_case(3, 4, seed=9)
    t = alto.SparseTensor.from_coo(idx, vals, shape)
    y = t.mttkrp(factors, 0)
    assert y.flags.c_contiguous and y.flags.writeable and not y.flags.owndata
    assert y.ctypes.data % 64 == 0
    y += 1.0  # the array is the caller's
    del t
    assert np.isfinite(y).all()


def test_real_tensor_every_mode():
    path = real_tensor("kinships.tns")
    t = alto.read_tns(path, threads=2)
    x = dense_of(t)
    rng = np.random.default_rng(1)
    factors = [rng.random((d, 9)) for d in t.shape]
    for mode in range(t.ndim):
        assert_close(t.mttkrp(factors, mode), einsum_mttkrp(x, factors, mode))
