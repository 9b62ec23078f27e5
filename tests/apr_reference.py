#!/usr/bin/env python3
"""CP-APR (Chi and Kolda's multiplicative updates, as Tensor Toolbox's cp_apr 'mu'), written
plainly in NumPy: the reference `tests/suite/apr.rs` compares `alto cpd --model apr` with.

usage: apr_reference.py TNS INIT_DIR ITERS INNER TOL KAPPA KAPPA_TOL EPSILON
Reads a FROSTT .tns file (duplicates summed) and INIT_DIR/factor<n>.npy (the dims are the
factors' row counts); prints the log-likelihood after every outer iteration as a JSON list.
"""
import json
import sys

import numpy as np


def read_tns(path, order):
    rows = []
    with open(path) as f:
        for line in f:
            tok = line.split()
            if not tok or tok[0].startswith("#"):
                continue
            rows.append(tok)
    a = np.array(rows, dtype=float)
    subs = a[:, :order].astype(np.int64) - 1
    uniq, inv = np.unique(subs, axis=0, return_inverse=True)
    vals = np.zeros(len(uniq))
    np.add.at(vals, inv.ravel(), a[:, order])
    return uniq, vals


def loglik(subs, vals, lam, U):
    m = np.tile(lam, (len(vals), 1))
    for n, u in enumerate(U):
        m = m * u[subs[:, n]]
    total = lam.copy()
    for u in U:
        total = total * u.sum(axis=0)
    keep = vals != 0
    return float(np.sum(vals[keep] * np.log(m.sum(axis=1)[keep])) - total.sum())


def cp_apr(subs, vals, U, iters, inner, tol, kappa, kappa_tol, eps):
    """The log-likelihood after every outer iteration from the initial factors U."""
    order = len(U)
    U = [u.astype(float) for u in U]
    lam = np.ones(U[0].shape[1])
    for n in range(order):
        s = U[n].sum(axis=0)
        U[n] = U[n] / s
        lam = lam * s
    phi = [np.zeros_like(u) for u in U]
    out = []
    for it in range(iters):
        all_first = True
        for n in range(order):
            if it > 0 and kappa > 0:
                v = (U[n] < kappa_tol) & (phi[n] > 1)
                U[n][v] += kappa
            B = U[n] * lam
            Pi = np.ones((len(vals), B.shape[1]))
            for m in range(order):
                if m != n:
                    Pi = Pi * U[m][subs[:, m]]
            for _ in range(inner):
                model = np.sum(B[subs[:, n]] * Pi, axis=1)
                w = vals / np.maximum(model, eps)
                P = np.zeros_like(B)
                np.add.at(P, subs[:, n], w[:, None] * Pi)
                phi[n] = P
                if np.max(np.abs(np.minimum(B, 1 - P))) < tol:
                    break
                all_first = False
                B = B * P
            s = B.sum(axis=0)
            lam = s
            U[n] = B / np.where(s > 0, s, 1.0)
        out.append(loglik(subs, vals, lam, U))
        if all_first:
            break
    return out


def main():
    path, init = sys.argv[1], sys.argv[2]
    iters, inner = int(sys.argv[3]), int(sys.argv[4])
    tol, kappa, kappa_tol, eps = (float(x) for x in sys.argv[5:9])
    U = []
    while True:
        try:
            U.append(np.load(f"{init}/factor{len(U)}.npy"))
        except FileNotFoundError:
            break
    subs, vals = read_tns(path, len(U))
    print(json.dumps(cp_apr(subs, vals, U, iters, inner, tol, kappa, kappa_tol, eps)))


if __name__ == "__main__":
    main()
