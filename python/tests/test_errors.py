"""Bad input raises a Python exception with the command's message, never crashes."""

import numpy as np
import pytest

import alto
from conftest import real_tensor

IDX = np.array([[0, 0, 0], [1, 2, 3], [2, 1, 0]])
VALS = np.array([1.0, 2.0, 3.0])
SHAPE = (3, 3, 4)


def tensor():
    return alto.SparseTensor.from_coo(IDX, VALS, SHAPE)


def factors(rank=2, shape=SHAPE):
    return [np.ones((d, rank)) for d in shape]


@pytest.mark.parametrize(
    "indices,values,error,match",
    [
        (IDX.astype(float), VALS, TypeError, "indices must be an integer array, got dtype float64"),
        (IDX, VALS.astype(complex), TypeError, "values must be a real"),
        (IDX, np.array(["a", "b", "c"]), TypeError, "values must be a real"),
        (IDX.astype(bool), VALS, TypeError, "integer array"),
    ],
)
def test_wrong_dtype(indices, values, error, match):
    with pytest.raises(error, match=match):
        alto.SparseTensor.from_coo(indices, values, SHAPE)


def test_wrong_factor_dtype_and_shape():
    t = tensor()
    with pytest.raises(TypeError, match=r"factors\[1\] must be a real"):
        t.mttkrp([np.ones((3, 2)), np.ones((3, 2), dtype=complex), np.ones((4, 2))], 0)
    with pytest.raises(ValueError, match=r"factor 2 is 5 x 2, expected 4 x 2"):
        t.mttkrp([np.ones((3, 2)), np.ones((3, 2)), np.ones((5, 2))], 0)
    with pytest.raises(ValueError, match=r"factors\[0\] must be 2-D"):
        t.mttkrp([np.ones(3), np.ones((3, 1)), np.ones((4, 1))], 0)
    with pytest.raises(ValueError, match="2 factor matrices for an order-3 tensor"):
        t.mttkrp(factors()[:2], 0)
    with pytest.raises(ValueError, match="rank must be at least 1"):
        t.mttkrp(factors(rank=0), 0)
    with pytest.raises(ValueError, match="mode 3 does not exist in an order-3 tensor"):
        t.mttkrp(factors(), 3)
    with pytest.raises(ValueError, match="mode -1 does not exist"):
        t.mttkrp(factors(), -1)
    with pytest.raises(ValueError, match="unknown sync strategy `fast`"):
        t.mttkrp(factors(), 0, sync="fast")
    with pytest.raises(ValueError, match="kernel: unknown kernel `sse9`"):
        t.mttkrp(factors(), 0, kernel="sse9")
    with pytest.raises(ValueError, match="kernel: kernel scalar_r16 cannot run rank 2"):
        t.mttkrp(factors(), 0, kernel="scalar_r16")
    with pytest.raises(ValueError, match="threads must be at least 1"):
        t.mttkrp(factors(), 0, threads=0)
    with pytest.raises(ValueError, match="exceeds"):
        t.mttkrp(factors(), 0, threads=100_000)


@pytest.mark.parametrize(
    "indices,values,shape,match",
    [
        (np.zeros((4, 2), dtype=int), VALS, SHAPE, r"indices must have shape \(nnz, 3\) or \(3, nnz\)"),
        (IDX[:, :2], VALS, SHAPE, "mode 0 has 2 indices but there are 3 values"),
        (IDX[None], VALS, SHAPE, "indices must have shape"),
        (IDX, VALS[:2], SHAPE, "has 3 indices but there are 2 values"),
        (IDX, VALS.reshape(3, 1), SHAPE, "values must be 1-D"),
        (IDX - 1, VALS, SHAPE, r"indices\[0, 0\] is -1: indices are 0-based and must be >= 0"),
        (IDX, VALS, (3, 2, 4), r"mode 1 index 2 \(0-based\) is outside dimension 2"),
        (IDX, [1.0, np.nan, 3.0], SHAPE, r"values\[1\] is NaN: values must be finite"),
        (IDX, [1.0, 2.0, np.inf], SHAPE, "values must be finite"),
        (IDX, VALS, (3, 0, 4), "dimension 0 of mode 1 is invalid"),
        (IDX, VALS, (3, -3, 4), "dimension -3 of mode 1 is invalid"),
        (IDX[:, :1], VALS, (3,), "order 1 is not supported"),
        (np.zeros((0, 3), dtype=int), np.zeros(0), SHAPE, "no nonzeros"),
    ],
)
def test_bad_coo(indices, values, shape, match):
    with pytest.raises(ValueError, match=match):
        alto.SparseTensor.from_coo(indices, values, shape)


def test_missing_arguments():
    with pytest.raises(ValueError, match="needs indices, values and shape"):
        alto.SparseTensor.from_coo(IDX)


def test_bad_cp_als_options():
    t = tensor()
    with pytest.raises(ValueError, match="rank: must be at least 1"):
        alto.cp_als(t, 0)
    with pytest.raises(ValueError, match="rank: must be at least 1, got -2"):
        alto.cp_als(t, -2)
    with pytest.raises(ValueError, match="rank: 4 is larger than makes sense"):
        alto.cp_als(t, 4)
    with pytest.raises(ValueError, match="n_iter_max: must be at least 1"):
        alto.cp_als(t, 1, n_iter_max=0)
    with pytest.raises(ValueError, match="tol: must be a finite number >= 0"):
        alto.cp_als(t, 1, tol=-1.0)
    with pytest.raises(ValueError, match="tol: must be a finite number >= 0"):
        alto.cp_als(t, 1, tol=float("nan"))
    with pytest.raises(ValueError, match="init: unknown initialization `svd`"):
        alto.cp_als(t, 1, init="svd")
    with pytest.raises(ValueError, match="init: factor 1 is 2 x 1, expected 3 x 1"):
        alto.cp_als(t, 1, init=[np.ones((3, 1)), np.ones((2, 1)), np.ones((4, 1))])
    with pytest.raises(ValueError, match="init: 2 factor matrices"):
        alto.cp_als(t, 1, init=[np.ones((3, 1)), np.ones((3, 1))])
    with pytest.raises(ValueError, match="random_state must be >= 0"):
        alto.cp_als(t, 1, random_state=-1)
    with pytest.raises(TypeError):
        alto.cp_als("not a tensor", 1)


def test_zero_values_tensor():
    t = alto.SparseTensor.from_coo(IDX, np.zeros(3), SHAPE)
    with pytest.raises(ValueError, match="nonzero, finite norm"):
        alto.cp_als(t, 1)


def test_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.tns: cannot read"):
        alto.read_tns(tmp_path / "missing.tns")
    with pytest.raises(OSError, match="missing.alto"):
        alto.load(tmp_path / "missing.alto")
    bad = tmp_path / "bad.tns"
    bad.write_text("1 2 3 1.0\n1 0 3 2.0\n")
    with pytest.raises(ValueError, match=r"bad.tns:2: mode 2 index is 0, but FROSTT indices are 1-based"):
        alto.read_tns(bad)
    bad.write_text("1 2 3 nan\n")
    with pytest.raises(ValueError, match="bad.tns:1: value `nan` is not finite"):
        alto.read_tns(bad)
    junk = tmp_path / "junk.alto"
    junk.write_bytes(b"not an alto file at all")
    with pytest.raises(ValueError, match="junk.alto: not an ALTO binary file"):
        alto.load(junk)
    with pytest.raises(ValueError, match=r"out.npy: unknown file type \(expected .tns or .alto\)"):
        tensor().save(tmp_path / "out.npy")
    with pytest.raises(OSError):
        tensor().save(tmp_path / "no" / "such" / "dir.alto")
    with pytest.raises(ValueError, match="declared dims have 2 modes but the file has order 3"):
        alto.read_tns(real_tensor("kinships.tns"), dims=[104, 25])


def test_bad_gen():
    with pytest.raises(ValueError, match="unknown generator `nope`"):
        alto.gen("nope", 10)
    with pytest.raises(ValueError, match="uniform needs dims"):
        alto.gen("uniform", 10)
    with pytest.raises(ValueError, match="lowrank needs rank"):
        alto.gen("lowrank", 10, dims=[3, 4])
    with pytest.raises(ValueError, match="nnz must be at least 1"):
        alto.gen("uniform", 0, dims=[3, 4])
    with pytest.raises(ValueError, match="dims and rank apply to uniform/lowrank"):
        alto.gen("nips", 100, dims=[3, 4])
    with pytest.raises(ValueError, match="return_factors applies to lowrank only"):
        alto.gen("uniform", 10, dims=[3, 4], return_factors=True)
    with pytest.raises(ValueError, match="cv_slices must be a finite number"):
        alto.gen("skewed", 10, dims=[3, 4], cv_slices=-1.0)
    with pytest.raises(ValueError, match="ALTO supports at most 128"):
        alto.gen("uniform", 10, dims=[2**40] * 4)


def test_scipy_with_extra_arguments():
    sp = pytest.importorskip("scipy.sparse")
    m = sp.coo_matrix(np.eye(3))
    with pytest.raises(ValueError, match="pass it alone"):
        alto.SparseTensor.from_coo(m, VALS, (3, 3))
