"""Files, info(), gen() and scipy.sparse input."""

import json
import subprocess

import numpy as np
import pytest

import alto
from conftest import REPO, dense, dense_of, real_tensor

# The keys of `alto info --json` (README, "JSON fields").
INFO_KEYS = {
    "file", "order", "dims", "nnz", "duplicates_merged", "total_bits", "index_width",
    "partitions", "min_fiber_reuse", "modes", "alto_bytes", "coo_bytes", "compression_vs_coo",
    "parse_seconds", "parse_mb_per_s", "build_seconds",
}
MODE_KEYS = {"mode", "dim", "bits", "mask", "fiber_reuse", "strategy", "flag_bit"}


def test_read_tns_and_info():
    path = real_tensor("nycflights13-4d.tns")
    t = alto.read_tns(path, threads=2)
    assert t.shape == (365, 20, 105, 16) and t.ndim == 4 and t.nnz == 294734
    assert t.partitions == 2
    info = t.info()
    assert set(info) == INFO_KEYS
    assert all(set(m) == MODE_KEYS for m in info["modes"])
    assert info["file"] == str(path) and info["dims"] == list(t.shape) and info["nnz"] == t.nnz
    assert info["parse_seconds"] > 0 and set(info["build_seconds"]) >= {"sort", "total"}
    assert "SparseTensor(shape=(365, 20, 105, 16), nnz=294734" in repr(t)


def test_info_matches_the_command():
    # Where the `alto` binary is built, its JSON has the same keys and values (bar timings).
    built = [REPO / "target" / kind / "alto" for kind in ("release", "debug")]
    exe = next((p for p in built if p.is_file()), None)
    if exe is None:
        pytest.skip(f"the alto command is not built ({built[0]} or {built[1]})")
    path = real_tensor("kinships.tns")
    cli = json.loads(subprocess.run(
        [str(exe), "info", str(path), "--json", "--threads", "2"], check=True, capture_output=True
    ).stdout)
    ours = alto.read_tns(path, threads=2).info()
    assert set(cli) == set(ours)
    for key in INFO_KEYS - {"parse_seconds", "parse_mb_per_s", "build_seconds"}:
        assert cli[key] == ours[key], key


def test_round_trips(tmp_path):
    t = alto.gen("skewed", 5000, dims=[50, 60, 70], seed=4)
    x = dense_of(t)
    t.save(tmp_path / "t.alto")
    t.save(tmp_path / "t.tns")
    a = alto.load(tmp_path / "t.alto", threads=1)
    assert a.partitions == 1 and a.info()["build_seconds"] is None
    b = alto.read_tns(tmp_path / "t.tns", dims=[50, 60, 70])
    for u in (a, b):
        assert u.shape == t.shape and u.nnz == t.nnz
        np.testing.assert_array_equal(dense_of(u), x)


def test_to_coo():
    idx = np.array([[2, 0], [0, 1], [1, 1]])
    t = alto.SparseTensor.from_coo(idx, [3.0, 1.0, 2.0], (3, 2))
    i, v = t.to_coo()
    assert i.dtype == np.int64 and i.shape == (3, 2) and v.dtype == np.float64
    np.testing.assert_array_equal(dense(i, v, (3, 2)), dense(idx, [3.0, 1.0, 2.0], (3, 2)))


def test_gen_is_deterministic(tmp_path):
    a = alto.gen("nell-2", 20000, seed=1)
    b = alto.gen("nell-2", 20000, seed=1, output=tmp_path / "n.tns")
    assert a.shape == b.shape and a.nnz == b.nnz
    np.testing.assert_array_equal(a.to_coo()[0], b.to_coo()[0])
    c = alto.read_tns(tmp_path / "n.tns", dims=list(a.shape))
    np.testing.assert_array_equal(dense_of(c), dense_of(a))
    u = alto.gen("uniform", 1000, dims=[10, 20, 30, 4], seed=2, output=tmp_path / "u.alto")
    assert alto.load(tmp_path / "u.alto").nnz == u.nnz
    assert alto.gen("amazon", 1000, keep_dims=True).info()["index_width"] == "u128"


def test_scipy_sparse_input():
    sp = pytest.importorskip("scipy.sparse")
    m = sp.random(40, 30, density=0.1, format="csr", random_state=1)
    t = alto.SparseTensor.from_coo(m)
    assert t.shape == (40, 30) and t.nnz == m.nnz
    np.testing.assert_array_equal(dense_of(t), m.toarray())
    u = [np.ones((40, 2)), np.arange(60.0).reshape(30, 2)]
    np.testing.assert_allclose(t.mttkrp(u, 0), m @ u[1])
    np.testing.assert_allclose(t.mttkrp(u, 1), m.T @ u[0])
