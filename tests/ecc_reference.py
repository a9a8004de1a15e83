"""Test-only reference of the authors' ECC algorithm (fzwark/ECC @ 2d7db1a, ``clustering_ecc.py``).

Written from their code, independently of ``evalkit.ecc``: per-query dictionaries of
comparisons, the per-cluster Bradley-Terry fit as their ``OfflineBTRanker`` (a logistic regression
without intercept on the design ``x[a] = -1, x[b] = +1`` with sample weights ``r_qk / N_q`` and
scikit-learn's penalty ``1/2 ||theta||^2`` at ``C = 1``), solved here by Newton's method to
machine precision instead of their L-BFGS (``tol = 1e-4``) so that two implementations can be
compared to 1e-6. Their loop, in order, per iteration:

1. for every cluster ``k``: fit the weighted BT profile on all training comparisons, weight
   ``resp[q][k] / N_q`` (weights below 1e-12 dropped);
2. centres ``c_k`` = the responsibility-weighted mean of the unit embeddings, normalised (a
   cluster with total weight <= 1e-9 keeps its centre);
3. ``loglik[k][q]`` = the mean over the query's ``N_q`` comparisons of ``log p_k(winner beats loser)``;
4. ``resp[q] = softmax((loglik[.][q] + lam * e_q' c) / T)``;
5. stop when ``mean_q KL(old resp_q || new resp_q) < 1e-3`` and ``||C - C_prev||_F < 1e-4``, or when
   the relative gain of ``sum_q logsumexp((loglik + lam sims) / T)`` has been below 1e-4 for more
   than 5 iterations in a row (the count starts at 1 on the first iteration).
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

EPS = 1e-12
TOL_KL, TOL_C, TOL_REL, PATIENCE = 1e-3, 1e-4, 1e-4, 5


def _unit(x: np.ndarray) -> np.ndarray:
    return x / max(float(np.linalg.norm(x)), 1e-12)


def bt_fit_weighted(rows: list[tuple[int, int, float]], n_models: int, C: float = 1.0) -> np.ndarray:
    """argmin_theta 1/2 ||theta||^2 + C sum_i w_i log(1 + exp(-(theta_win - theta_lose))), by Newton."""
    win = np.array([r[0] for r in rows], dtype=int)
    lose = np.array([r[1] for r in rows], dtype=int)
    w = np.array([r[2] for r in rows], dtype=float)
    theta = np.zeros(n_models)
    for _ in range(100):
        d = theta[win] - theta[lose]
        p = 1.0 / (1.0 + np.exp(-d))  # P(win beats lose)
        g = theta.copy()
        np.add.at(g, win, -C * w * (1 - p))
        np.add.at(g, lose, C * w * (1 - p))
        h = np.eye(n_models)
        c = C * w * p * (1 - p)
        np.add.at(h, (win, win), c)
        np.add.at(h, (lose, lose), c)
        np.add.at(h, (win, lose), -c)
        np.add.at(h, (lose, win), -c)
        step = np.linalg.solve(h, g)
        theta -= step
        if np.max(np.abs(step)) < 1e-13:
            break
    return theta


def fit(votes: dict[str, list[tuple[int, int]]], emb: dict[str, np.ndarray], resp0: dict[str, np.ndarray],
        n_models: int, *, lam: float = 3.0, T: float = 0.1, max_iter: int = 100_000,
        stop: bool = True) -> dict:
    """Run the authors' loop from ``resp0``; ``votes[q]`` lists ``(winner, loser)`` model positions.

    Returns the last iteration's profiles ``theta`` (K, M), centres, responsibilities and the
    number of iterations.
    """
    qs = sorted(votes)
    K = len(next(iter(resp0.values())))
    resp = {q: np.asarray(resp0[q], dtype=float).copy() for q in qs}
    E = {q: _unit(np.asarray(emb[q], dtype=float)) for q in qs}
    R = np.stack([resp[q] for q in qs])
    Emat = np.stack([E[q] for q in qs])
    centroids = (R.T @ Emat) / np.clip(R.sum(axis=0)[:, None], 1e-12, None)
    centroids = np.vstack([_unit(c) for c in centroids])
    L_prev, no_improve = math.nan, 0
    theta = np.zeros((K, n_models))
    it = 0
    for it in range(max_iter):  # noqa: B007 (the count is returned)
        prev_centroids = centroids.copy()
        # 1. per-cluster weighted BT
        theta = np.zeros((K, n_models))
        for k in range(K):
            rows = []
            for q in qs:
                n_q = max(1, len(votes[q]))
                wk = resp[q][k] / n_q
                if wk < 1e-12:
                    continue
                rows += [(a, b, wk) for a, b in votes[q]]
            if rows:
                theta[k] = bt_fit_weighted(rows, n_models)
        # 2. centres
        new_c = np.zeros_like(centroids)
        tot = np.zeros(K)
        for q in qs:
            new_c += resp[q][:, None] * E[q][None, :]
            tot += resp[q]
        for k in range(K):
            if tot[k] > 1e-9:
                centroids[k] = new_c[k] / tot[k]
        centroids = np.vstack([_unit(c) for c in centroids])
        # 3. mean log-likelihood of each query's comparisons under each profile
        loglik = defaultdict(dict)
        for k in range(K):
            for q in qs:
                s = 0.0
                for a, b in votes[q]:
                    s += -math.log1p(math.exp(-(theta[k, a] - theta[k, b])))
                loglik[k][q] = s / max(1, len(votes[q]))
        # 4. responsibilities
        prev = {q: resp[q].copy() for q in qs}
        for q in qs:
            v = (np.array([loglik[k][q] for k in range(K)]) + lam * (E[q] @ centroids.T)) / T
            v -= v.max()
            p = np.exp(v)
            resp[q] = p / p.sum()
        # 5. stopping
        kl = 0.0
        for q in qs:
            a = np.clip(prev[q], EPS, 1.0)
            a /= a.sum()
            b = np.clip(resp[q], EPS, 1.0)
            b /= b.sum()
            kl += float(np.sum(a * (np.log(a) - np.log(b))))
        kl /= len(qs)
        c_shift = float(np.linalg.norm(centroids - prev_centroids))
        L_cur = 0.0
        for q in qs:
            v = (np.array([loglik[k][q] for k in range(K)]) + lam * (E[q] @ centroids.T)) / T
            m = v.max()
            L_cur += m + math.log(np.exp(v - m).sum())
        if it == 0:
            L_prev, no_improve = L_cur, 0
        drel = (L_cur - L_prev) / (abs(L_prev) + 1e-9)
        no_improve = no_improve + 1 if drel < TOL_REL else 0
        L_prev = L_cur
        if stop and ((kl < TOL_KL and c_shift < TOL_C) or no_improve > PATIENCE):
            break
    return {"theta": theta, "centroids": centroids, "resp": np.stack([resp[q] for q in qs]), "items": qs,
            "n_iter": it + 1}


def inputs(pairs, models, embeddings):  # type: ignore[no-untyped-def]
    """The reference's inputs from a long table of comparisons (columns item, winner, loser).

    ``models`` orders the model indices (e.g. a fit's ``models``); ``embeddings`` is a frame
    indexed by item. Returns ``votes`` (per query, a list of (winner, loser) indices) and ``emb``
    (per query, its embedding), in the table's order of queries.
    """
    pos = {m: i for i, m in enumerate(np.asarray(models).astype(str))}
    votes: dict[str, list[tuple[int, int]]] = {}
    for q, w, lo in zip(pairs["item"].astype(str), pairs["winner"].astype(str), pairs["loser"].astype(str),
                        strict=True):
        votes.setdefault(q, []).append((pos[w], pos[lo]))
    return votes, {q: embeddings.loc[q].to_numpy() for q in votes}
