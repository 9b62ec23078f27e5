"""`alto cpd --model apr` (the command; `test_cp_apr.py` checks the bindings' `alto.cp_apr`
the same way) against the NumPy reference `tests/apr_reference.py`: the same log-likelihood
after every outer iteration from the same initial factors, to 1e-8 relative. Needs the `alto`
binary of a `cargo test` or `cargo build` of this checkout (or `$ALTO_BIN`); skipped without
one."""

import json
import os
import subprocess

import numpy as np
import pytest

from conftest import REPO, apr_reference


def alto_binary():
    env = os.environ.get("ALTO_BIN")
    candidates = [env] if env else []
    # Debug first: the README's test command has just built it from this checkout (cargo
    # test), while a release binary may be left from an older build.
    candidates += [str(REPO / "target" / p / "alto") for p in ("debug", "release")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    pytest.skip("no alto binary: run `cargo build` or set ALTO_BIN")


def test_trajectory_matches_numpy(tmp_path):
    exe = alto_binary()
    tns = tmp_path / "counts.tns"
    subprocess.run(
        [exe, "gen", "lowrank", "--poisson", "6", "--dims", "24,18,12", "--rank", "3",
         "--nnz", "1500", "--seed", "5", "-o", str(tns)],
        check=True, capture_output=True,
    )
    init = tmp_path / "init"
    init.mkdir()
    rng = np.random.default_rng(3)
    for n, d in enumerate((24, 18, 12)):
        np.save(init / f"factor{n}.npy", rng.random((d, 3)))
    out = subprocess.run(
        [exe, "cpd", str(tns), "--model", "apr", "--dims", "24,18,12", "--rank", "3",
         "--iters", "25", "--init", str(init), "--threads", "2", "--json"],
        check=True, capture_output=True,
    )
    ours = [it["loglik"] for it in json.loads(out.stdout)["iterations"]]
    ref = apr_reference()
    order = 3
    U = [np.load(init / f"factor{n}.npy") for n in range(order)]
    subs, vals = ref.read_tns(tns, order)
    theirs = ref.cp_apr(subs, vals, U, 25, 10, 1e-4, 0.01, 1e-10, 1e-10)
    assert len(ours) == len(theirs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=0)
