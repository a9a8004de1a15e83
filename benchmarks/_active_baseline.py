"""Today's FAQ batched step, kept verbatim as the baseline of ``bench_active.py``.

A copy of ``evalkit.active._faq_batch`` (and its helpers) as it was before the blocked, fused and
threaded version: the benchmark times both in the same process and checks that they give the same
numbers bit for bit.
"""
# ruff: noqa
from __future__ import annotations

from typing import Any

import numpy as np

from evalkit.active import _FLOAT, _CHUNK, ActiveFactors, ActiveParams, _pai, _rngs

_BLOCK = 128


def _laplace_step(u: np.ndarray, S: np.ndarray, v: np.ndarray, z: np.ndarray, p: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Batched rank-one Laplace update; returns (u_new, S_new, delta_u, Sv, coef).

    ``S <- S - w S v v' S / (1 + w v' S v)``, ``u <- u + S_new v (z - p)`` with ``w = p (1 - p)``.
    """
    w = p * (1 - p)
    Sv = np.matmul(S, v[:, :, None])[:, :, 0]
    vSv = np.einsum("bk,bk->b", v, Sv)
    coef = w / (1 + w * vSv)
    Svc = Sv * np.sqrt(coef)[:, None]
    S_new = S - np.matmul(Svc[:, :, None], Svc[:, None, :])
    S_new_v = Sv / (1 + w * vSv)[:, None]
    delta = S_new_v * (z - p)[:, None]
    return u + delta, S_new, delta, Svc



def _draw_blocked(mix: np.ndarray, target: np.ndarray, blk: int) -> np.ndarray:
    """Inverse-CDF draw per row of the unnormalised ``mix`` (width a multiple of ``blk``).

    Two levels (block sums, then one block) replace a full cumulative sum: one pass over ``mix``.
    ``target`` is in ``[0, row total)``.
    """
    B, Np = mix.shape
    sums = mix.reshape(B, Np // blk, blk).sum(axis=2, dtype=np.float64)
    csum = np.cumsum(sums, axis=1)
    block = np.minimum((csum <= target[:, None]).sum(axis=1), Np // blk - 1)
    # a block with zero mass is never chosen unless rounding pushes past the end: step back
    while True:
        empty = sums[np.arange(B), block] <= 0
        if not empty.any():
            break
        block[empty] -= 1
    before = np.where(block > 0, csum[np.arange(B), np.maximum(block - 1, 0)], 0.0)
    cols = block[:, None] * blk + np.arange(blk)
    inner = np.cumsum(np.take_along_axis(mix, cols, axis=1).astype(np.float64), axis=1)
    pos = np.minimum((inner <= (target - before)[:, None]).sum(axis=1), blk - 1)
    # never land on a zero-probability item (rounding at a block's right end)
    vals = np.take_along_axis(mix, cols, axis=1)
    for r in np.flatnonzero(vals[np.arange(B), pos] <= 0):
        nz = np.flatnonzero(vals[r] > 0)
        pos[r] = nz[np.searchsorted(nz, pos[r], side="right") - 1] if (nz <= pos[r]).any() else nz[0]
    return block * blk + pos



def _faq_batch(Z: np.ndarray, factors: ActiveFactors, budget: int, params: ActiveParams,
               rngs: list[np.random.Generator], *, replace_draws: bool, weighted: bool,
               variance: str, trace: bool = False) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The FAQ loop (stage 2) and the PAI estimate (stage 3) for a block of rows."""
    B, N = Z.shape
    n_b = budget
    tau = params.tau
    Np = -(-N // _BLOCK) * _BLOCK  # items padded to whole blocks; pads carry zero mass
    V = factors.V
    Vp = np.zeros((Np, V.shape[1]))
    Vp[:N] = V
    V32 = Vp.astype(_FLOAT)
    VT32 = np.ascontiguousarray(V32.T)
    bp = np.zeros(Np)
    bp[:N] = factors.b
    unif = np.stack([g.random(n_b) for g in rngs])
    u = np.tile(factors.prior_mean, (B, 1))
    S = np.tile(factors.prior_cov, (B, 1, 1))
    logits = (u.astype(_FLOAT) @ VT32) + bp.astype(_FLOAT)
    d = None
    if params.rho * n_b > 1:  # alpha_t > 0 for some t >= 1
        d = np.einsum("jk,kl,jl->j", Vp, factors.prior_cov, Vp).astype(_FLOAT)[None, :].repeat(B, 0)
    rows = np.arange(B)
    drawn = np.zeros((B, Np), dtype=bool) if not replace_draws else None
    log_z = np.empty((B, n_b))  # z_{I_t}
    log_q = np.empty((B, n_b))  # q_t(I_t)
    log_p = np.empty((B, n_b))  # p_{I_t}^(t-1)
    log_pm = np.empty((B, n_b))  # (1/N) sum_j p_j^(t-1)
    cvar = np.empty((B, n_b))  # model-based conditional variance of phi_t (faq_weighted)
    tr_q: list[np.ndarray] = []
    half = _FLOAT(0.5)
    quarter = _FLOAT(0.25)
    for t in range(1, n_b + 1):
        # p = sigmoid(x) = (1 + tanh(x/2)) / 2 and w = p (1 - p) = (1 - tanh(x/2)^2) / 4
        th = np.multiply(logits, half)
        np.tanh(th, out=th)
        ps = 0.5 * (N + th[:, :N].sum(axis=1, dtype=np.float64))  # sum_j p_j^(t-1)
        w = np.square(th)
        np.subtract(_FLOAT(1), w, out=w)
        w *= quarter
        w[:, N:] = 0
        alpha_t = max(0.0, 1.0 - t / (params.rho * n_b))
        beta_t = params.beta0 * min(1.0, t / (params.gamma * n_b))
        if alpha_t > 0:
            assert d is not None
            mix = np.sqrt(w)
            mix /= mix.sum(axis=1, keepdims=True)
            g = (w @ V32) / N  # (B, k): (1/N) sum_j w_j v_j
            Sg = np.matmul(S, g.astype(float)[:, :, None])[:, :, 0].astype(_FLOAT)
            c = Sg @ VT32  # v_j' Sigma g
            s_a = w * c
            s_a *= c
            den = w * d
            den += 1
            s_a /= den
            tot = s_a.sum(axis=1, keepdims=True)
            tot = np.where(tot > 0, tot, _FLOAT(1))
            s_a *= _FLOAT(alpha_t) / tot
            mix *= _FLOAT(1 - alpha_t)
            mix += s_a
            if beta_t != 1.0:
                np.power(mix, _FLOAT(beta_t), out=mix)
        elif beta_t == 1.0:
            mix = np.sqrt(w)
        elif beta_t == 2.0:
            mix = w.copy()
        else:  # sqrt(w)^beta = w^(beta / 2)
            mix = np.power(w, _FLOAT(beta_t / 2))
        mix[:, N:] = 0
        if drawn is not None:
            mix[drawn] = 0
            n_left = N - drawn.sum(axis=1)
        else:
            n_left = np.full(B, N)
        # q_t = tau / N + (1 - tau) mix / sum(mix); one uniform draws from the mixture: below
        # tau, a uniform item (among those left); above, the inverse CDF of mix
        uu = unif[:, t - 1]
        low = uu < tau
        total = mix.sum(axis=1, dtype=np.float64)
        idx = _draw_blocked(mix, np.clip((uu - tau) / (1 - tau), 0, 1) * total, _BLOCK)
        if low.any():
            kth = np.floor(uu[low] / tau * n_left[low]).astype(int)
            if drawn is None:
                idx[low] = kth
            else:
                for r, kk in zip(np.flatnonzero(low), kth, strict=True):
                    idx[r] = np.flatnonzero(~drawn[r, :N])[kk]
        mix_i = mix[rows, idx].astype(float)
        q_i = tau / n_left + (1 - tau) * mix_i / total
        if trace:
            qt = (1 - tau) * mix[:, :N].astype(float) / total[:, None] + tau / n_left[:, None]
            if drawn is not None:
                qt[drawn[:, :N]] = 0
            tr_q.append(qt)
        if drawn is not None:
            drawn[rows, idx] = True
        p_i = 0.5 * (1.0 + th[rows, idx].astype(float))
        z = Z[rows, idx]
        log_z[:, t - 1] = z
        log_q[:, t - 1] = q_i
        log_p[:, t - 1] = p_i
        log_pm[:, t - 1] = ps / N
        if weighted:
            # model-based E[(phi_t - theta)^2 | past] under the current predictions
            q_all = (1 - tau) * mix[:, :N] / total[:, None].astype(_FLOAT) + _FLOAT(tau / N)
            cvar[:, t - 1] = ((w[:, :N] / q_all).sum(axis=1, dtype=np.float64)) / N**2 + 1e-12
        # rank-one Laplace update (Sherman-Morrison), then the logits and the quadratic forms
        v = Vp[idx]
        u, S, delta, Sv_scaled = _laplace_step(u, S, v, z, p_i)
        logits += delta.astype(_FLOAT) @ VT32
        if d is not None and t + 1 < params.rho * n_b:
            a = Sv_scaled.astype(_FLOAT) @ VT32
            a *= a
            d -= a
    info: dict[str, Any] = {"q": tr_q} if trace else {}
    if weighted:
        phi = log_pm + (log_z - log_p) / (N * log_q)
        a_t = 1.0 / cvar
        a_t /= a_t.sum(axis=1, keepdims=True)
        est = (a_t * phi).sum(axis=1)
        var_w = ((a_t**2) * (phi - est[:, None]) ** 2).sum(axis=1) * n_b / (n_b - 1)
        return est, np.sqrt(var_w), info
    est, se = _pai(log_z, log_q, log_p, log_pm, N, variance)
    return est, se, info


def faq_run_baseline(Z: np.ndarray, factors: ActiveFactors, budget: int, params: ActiveParams, seed: int,
                     method: str = "faq") -> tuple[np.ndarray, np.ndarray]:
    """``active_run(Z, factors, budget, method=method, params=params, seed=seed)``'s (estimate, se), old path."""
    rngs = _rngs(seed, Z.shape[0], 1)
    parts = [_faq_batch(Z[i: i + _CHUNK].astype(float), factors, int(budget), params, rngs[i: i + _CHUNK],
                        replace_draws=method != "faq_norep", weighted=method == "faq_weighted",
                        variance="source")[:2] for i in range(0, Z.shape[0], _CHUNK)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
