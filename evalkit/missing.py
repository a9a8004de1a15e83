"""Missing responses under cluster dependence: propensity models, IPW, bounds, sensitivity, report.

A model refuses, times out, is filtered or produces output nobody can parse on some items. This
module estimates the accuracy it would have had on *all* items, with intervals that respect the
clustering of items:

* **propensity models** for the response indicator ``R`` (``propensity_fit``): plain logistic,
  logistic with cluster fixed effects, and logistic with a cluster random intercept fitted by
  maximum likelihood (Laplace approximation, or adaptive Gauss–Hermite quadrature);
* **weights** (``weights_compute``): inverse propensities with truncation and diagnostics;
* **estimators** (``ipw_estimate``, ``ipw_compare``, ``ipw_bootstrap``, ``missing_complete_case``,
  ``missing_bounds``): Hájek IPW with cluster-robust CR1/CR2 variance (through
  :func:`evalkit.clustered.mean_estimate`), the cluster bootstrap that refits the propensity,
  complete-case and the missing-as-wrong / missing-as-right bounds;
* **sensitivity** (``sensitivity_delta``, ``sensitivity_tipping_point``, ``sensitivity_plot``):
  delta-adjusted MNAR analysis for one model or a two-model comparison;
* **the one report call** ``missing_report``: every estimator side by side for one model or a
  pair, with ICC, design effect, effective n and the missingness breakdown;
* ``missing_study``: the simulation study of METHODS.md section 1.

Paper: papers/000 (Handling Missing Responses under Cluster Dependence with Applications to
Language Model Evaluation).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import optimize, special

from ._checks import as_labels, check_alpha, warn
from .clustered import (
    Estimate,
    SEKind,
    bootstrap_cluster,
    cluster_scores_variance,
    deff_empirical,
    deff_from_icc,
    icc_anova,
    icc_latent,
    interval_t,
    mean_estimate,
    n_effective,
)
from .data import long_validate

__all__ = [
    "PropensityFit",
    "Weights",
    "MissingDetails",
    "propensity_fit",
    "weights_compute",
    "ipw_estimate",
    "ipw_compare",
    "ipw_bootstrap",
    "missing_complete_case",
    "missing_bounds",
    "missing_breakdown",
    "missing_features",
    "missing_report",
    "missing_study",
    "sensitivity_delta",
    "sensitivity_tipping_point",
    "sensitivity_plot",
]

PropensityKind = Literal["logistic", "fixed", "random"]
Truncation = None | str | tuple[str, float]

_LOG_SIGMA_BOUNDS = (-7.0, 4.0)  # sigma_u in [0.0009, 55]: the lower end means "no cluster effect"
_MODE_STEP_MAX = 2.0  # damping of the Newton steps for the conditional modes


# --------------------------------------------------------------------------------------------
# input helpers
# --------------------------------------------------------------------------------------------

def _as_response(R: npt.ArrayLike) -> np.ndarray:
    r = np.asarray(R)
    if r.ndim != 1:
        raise ValueError(f"R must be one-dimensional (one response indicator per item), got shape {r.shape}")
    if r.size == 0:
        raise ValueError("R is empty")
    r = r.astype(float)
    if np.isnan(r).any():
        raise ValueError("R contains NaN; it must be 1 (a gradable answer) or 0 (missing) for every item")
    if not np.isin(r, (0.0, 1.0)).all():
        raise ValueError("R must hold only 0/1 (1 = the item has a gradable answer)")
    return r


def _as_features(X: npt.ArrayLike | None, n: int, *, check_constant: bool = True) -> tuple[np.ndarray, list[str]]:
    """Features as an (n, k) float array (k may be 0) and their names."""
    if X is None:
        return np.zeros((n, 0)), []
    if isinstance(X, pd.DataFrame):
        names = [str(c) for c in X.columns]
        arr = X.to_numpy(dtype=float)
    elif isinstance(X, pd.Series):
        names = [str(X.name or "x")]
        arr = X.to_numpy(dtype=float)[:, None]
    else:
        arr = np.asarray(X, dtype=float)
        if arr.ndim == 1:
            arr = arr[:, None]
        names = [f"x{k}" for k in range(arr.shape[1])] if arr.ndim == 2 else []
    if arr.ndim != 2:
        raise ValueError(f"features must be an (n_items, n_features) array, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"features have {arr.shape[0]} rows but there are {n} items; they must align")
    bad = ~np.isfinite(arr)
    if bad.any():
        cols = [names[k] for k in np.flatnonzero(bad.any(axis=0))]
        raise ValueError(
            f"features contain {int(bad.sum())} NaN/infinite values (columns {cols}); impute them "
            "(for example with the column mean plus a 0/1 'was missing' indicator column) before fitting"
        )
    sd = arr.std(axis=0)
    const = [names[k] for k in np.flatnonzero(sd == 0)]
    if const and check_constant:
        raise ValueError(f"features {const} are constant; they duplicate the intercept, drop them")
    return arr, names


def _log_expit(eta: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -eta)


def _bernoulli_loglik(R: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Per-item ``R log p + (1 - R) log(1 - p)`` with ``p = expit(eta)``, computed stably."""
    return -np.logaddexp(0.0, np.where(R > 0.5, -eta, eta))


# --------------------------------------------------------------------------------------------
# propensity models
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PropensityFit:
    """A fitted model for the probability that an item has a gradable answer.

    The linear predictor of item ``j`` in cluster ``g`` is
    ``intercept + x_j' coef + cluster_effect[g]``; ``P(R = 1) = expit(linear predictor)``.

    Attributes
    ----------
    kind : {"logistic", "fixed", "random"}
    method : str
        ``"irls"`` (logistic, fixed), ``"laplace"`` or ``"aghq"`` (random).
    intercept : float
    coef : (k,) array
        Feature effects on the log-odds scale, in the units of the features given.
    feature_names : list of str
    sigma_u : float
        SD of the cluster random intercept (``kind="random"``; 0 otherwise).
    cluster_labels : (M,) array
        The distinct cluster labels (sorted), aligned with ``cluster_effect``.
    cluster_effect : (M,) array
        Conditional modes ``u_hat_g`` (random), fixed cluster intercepts relative to
        ``intercept`` (fixed; ``+inf``/``-inf`` for a cluster where every / no item was
        answered), zeros (logistic).
    p : (n,) array
        Fitted propensities of the items used in the fit.
    loglik : float
        Maximised log-likelihood (Laplace- or quadrature-approximated for ``random``).
    converged : bool
    n_iter : int
    message : str
        Optimiser message and any caveats (singular fit, separated clusters).
    cov : (k + 2, k + 2) array or None
        Approximate covariance of ``(intercept, coef, log sigma_u)`` from the observed
        information (random intercept only).
    n, n_clusters : int
    """

    kind: str
    method: str
    intercept: float
    coef: np.ndarray
    feature_names: list[str]
    sigma_u: float
    cluster_labels: np.ndarray
    cluster_effect: np.ndarray
    p: np.ndarray
    loglik: float
    converged: bool
    n_iter: int
    message: str
    n: int
    n_clusters: int
    cov: np.ndarray | None = field(default=None, repr=False)

    @property
    def params(self) -> pd.Series:
        """Intercept, feature effects and (random) ``sigma_u`` as a labelled Series."""
        idx = ["intercept", *self.feature_names] + (["sigma_u"] if self.kind == "random" else [])
        vals = [self.intercept, *self.coef.tolist()] + ([self.sigma_u] if self.kind == "random" else [])
        return pd.Series(vals, index=idx, dtype=float)

    def predict(self, X: npt.ArrayLike | None = None, clusters: npt.ArrayLike | None = None, *,
                conditional: bool = True) -> np.ndarray:
        """Propensities for (new) items.

        Parameters
        ----------
        X : (m, k) array, optional
            Features in the same columns as the fit; None means the fitted items (returns ``p``).
        clusters : (m,) labels, optional
            Cluster of each new item. Needed when the fit has cluster effects. A cluster not seen in
            the fit gets effect 0 (the population-average cluster of a random-intercept model).
        conditional : bool
            Use the clusters' effects (conditional modes for ``random``). False: set them to 0.

        Raises
        ------
        ValueError
            Feature shape mismatch, or clusters missing when the model has cluster effects.
        """
        if X is None and clusters is None:
            return self.p.copy()
        m = None
        if X is not None:
            Xa, _ = _as_features(X, np.asarray(X).shape[0], check_constant=False)
            if Xa.shape[1] != self.coef.size:
                raise ValueError(f"X has {Xa.shape[1]} features but the fit used {self.coef.size}")
            m = Xa.shape[0]
            eta = self.intercept + Xa @ self.coef
        elif self.coef.size:
            raise ValueError("this fit uses features: pass X")
        if clusters is not None:
            lab = np.asarray(clusters)
            m = lab.shape[0] if m is None else m
            if lab.shape[0] != m:
                raise ValueError("clusters and X must have the same number of rows")
            if X is None:
                eta = np.full(m, self.intercept)
            if conditional and self.kind != "logistic":
                pos = np.searchsorted(self.cluster_labels, lab)
                pos = np.clip(pos, 0, self.cluster_labels.size - 1)
                known = self.cluster_labels[pos] == lab
                eff = np.where(known, self.cluster_effect[pos], 0.0)
                with np.errstate(invalid="ignore"):
                    eta = eta + eff
        elif self.kind != "logistic" and conditional:
            raise ValueError("this fit has cluster effects: pass clusters (or conditional=False)")
        return special.expit(eta)


def _standardise(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    return (X - mu) / sd, mu, sd


def _unstandardise(b0: float, b: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> tuple[float, np.ndarray]:
    coef = b / sd
    return float(b0 - np.dot(coef, mu)), coef


def _irls(Z: np.ndarray, R: np.ndarray, *, offset: np.ndarray | None = None, max_iter: int = 100,
          tol: float = 1e-10, ridge: np.ndarray | None = None) -> tuple[np.ndarray, int, bool]:
    """Newton–Raphson for logistic regression on design ``Z`` (with step halving)."""
    n, q = Z.shape
    off = np.zeros(n) if offset is None else offset
    beta = np.zeros(q)
    pen = np.zeros(q) if ridge is None else ridge

    def nll(b: np.ndarray) -> float:
        return float(-_bernoulli_loglik(R, off + Z @ b).sum() + 0.5 * np.dot(pen * b, b))

    f = nll(beta)
    for it in range(1, max_iter + 1):
        p = special.expit(off + Z @ beta)
        g = Z.T @ (R - p) - pen * beta
        H = (Z * (p * (1 - p))[:, None]).T @ Z + np.diag(pen)
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(H, g, rcond=None)[0]
        t = 1.0
        while True:
            cand = beta + t * step
            fc = nll(cand)
            if fc <= f + 1e-12 or t < 1e-8:
                break
            t /= 2
        beta, f_old, f = cand, f, fc
        if np.max(np.abs(t * step)) < tol or abs(f_old - f) < 1e-15 * max(1.0, abs(f)):
            return beta, it, True
    return beta, max_iter, False


def _fit_logistic(R: np.ndarray, X: np.ndarray, names: list[str], codes: np.ndarray,
                  uniques: np.ndarray) -> PropensityFit:
    n, k = X.shape
    Xs, mu, sd = _standardise(X) if k else (X, np.zeros(0), np.ones(0))
    Z = np.column_stack([np.ones(n), Xs])
    beta, it, conv = _irls(Z, R)
    eta = Z @ beta
    msg = "converged" if conv else "IRLS did not converge"
    p = special.expit(eta)
    if np.any(np.abs(eta) > 25):
        msg += "; quasi-separation: some fitted propensities are numerically 0 or 1"
        warn("logistic propensity: some fitted propensities are numerically 0 or 1 (quasi-separation); "
             "the features almost perfectly predict response, so inverse weights will be extreme")
    b0, coef = _unstandardise(beta[0], beta[1:], mu, sd)
    return PropensityFit("logistic", "irls", b0, coef, names, 0.0, uniques, np.zeros(uniques.size), p,
                         float(_bernoulli_loglik(R, eta).sum()), conv, it, msg, n, int(uniques.size))


def _fit_fixed(R: np.ndarray, X: np.ndarray, names: list[str], codes: np.ndarray,
               uniques: np.ndarray) -> PropensityFit:
    n, k = X.shape
    M = uniques.size
    n_g = np.bincount(codes, minlength=M)
    r_g = np.bincount(codes, weights=R, minlength=M)
    all_obs = r_g == n_g
    none_obs = r_g == 0
    sep = all_obs | none_obs
    msg_parts = []
    if sep.any():
        labs = [str(v) for v in uniques[sep][:5]]
        msg_parts.append(f"{int(sep.sum())} separated clusters (all or none answered) get effect +/-inf")
        warn(f"cluster fixed-effect propensity: {int(all_obs.sum())} clusters have every item answered and "
             f"{int(none_obs.sum())} have none (e.g. {labs}); their propensities are set to 1 and 0. "
             "A cluster with no answers cannot be represented by any IPW estimate; consider kind='random'")
    keep = ~sep[codes]
    Xs, mu, sd = _standardise(X) if k else (X, np.zeros(0), np.ones(0))
    alpha = np.where(all_obs, np.inf, np.where(none_obs, -np.inf, 0.0))
    it, conv = 0, True
    b = np.zeros(k)
    if keep.any():
        live = np.flatnonzero(~sep)
        remap = -np.ones(M, dtype=int)
        remap[live] = np.arange(live.size)
        D = np.zeros((int(keep.sum()), live.size))
        D[np.arange(D.shape[0]), remap[codes[keep]]] = 1.0
        Z = np.column_stack([D, Xs[keep]])
        beta, it, conv = _irls(Z, R[keep])
        alpha[live] = beta[:live.size]
        b = beta[live.size:]
    b0_s = float(np.average(alpha[~sep], weights=n_g[~sep])) if (~sep).any() else 0.0
    b0, coef = _unstandardise(b0_s, b, mu, sd)
    with np.errstate(invalid="ignore"):
        eff = alpha - b0_s
        eta = b0 + X @ coef + eff[codes]
    p = special.expit(eta)
    ll = float(_bernoulli_loglik(R[keep], eta[keep]).sum()) if keep.any() else 0.0
    msg = "; ".join(["converged" if conv else "IRLS did not converge", *msg_parts])
    return PropensityFit("fixed", "irls", b0, coef, names, 0.0, uniques, eff, p, ll, conv, it, msg, n, int(M))


class _RandomIntercept:
    """Laplace / adaptive Gauss–Hermite marginal likelihood of a random-intercept logistic model."""

    def __init__(self, R: np.ndarray, Z: np.ndarray, codes: np.ndarray, M: int, n_quad: int = 1):
        self.R, self.Z, self.codes, self.M = R, Z, codes, M
        self.u = np.zeros(M)
        self.n_quad = n_quad
        if n_quad > 1:
            t, w = np.polynomial.hermite_e.hermegauss(n_quad)
        else:  # one node at the mode: exactly the Laplace approximation
            t, w = np.zeros(1), np.array([math.sqrt(2 * math.pi)])
        self.t = t
        self.logw = np.log(w) + t**2 / 2
        self.r_g = np.bincount(codes, weights=R, minlength=M)

    def modes(self, eta0: np.ndarray, sigma2: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Conditional modes ``u_hat`` (Newton, vectorised over clusters), ``p`` and curvature ``A``."""
        u = self.u.copy()
        codes, M = self.codes, self.M
        for _ in range(100):
            p = special.expit(eta0 + u[codes])
            grad = self.r_g - np.bincount(codes, weights=p, minlength=M) - u / sigma2
            A = np.bincount(codes, weights=p * (1 - p), minlength=M) + 1.0 / sigma2
            step = np.clip(grad / A, -_MODE_STEP_MAX, _MODE_STEP_MAX)
            u = u + step
            if np.max(np.abs(step)) < 1e-10:
                break
        p = special.expit(eta0 + u[codes])
        A = np.bincount(codes, weights=p * (1 - p), minlength=M) + 1.0 / sigma2
        self.u = u
        return u, p, A

    def laplace(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Negative Laplace log-likelihood and its exact gradient in ``(beta, log sigma)``."""
        beta, tau_raw = theta[:-1], theta[-1]
        tau = min(max(tau_raw, _LOG_SIGMA_BOUNDS[0]), _LOG_SIGMA_BOUNDS[1])
        sigma2 = math.exp(2 * tau)
        eta0 = self.Z @ beta
        u, p, A = self.modes(eta0, sigma2)
        codes, M, Z = self.codes, self.M, self.Z
        eta = eta0 + u[codes]
        ll = (np.sum(_bernoulli_loglik(self.R, eta)) - np.sum(u**2) / (2 * sigma2)
              - M * tau - 0.5 * np.sum(np.log(A)))
        w = p * (1 - p)
        w3 = w * (1 - 2 * p)
        D1 = np.bincount(codes, weights=w3, minlength=M)          # d A / d u
        c = -0.5 * D1 / A                                          # d F / d u at the mode
        du_dbeta_num = -(Z * w[:, None])                           # rows: -w_j x_j
        # d u_g / d beta = -sum_j w x / A_g ; assemble per-item multiplier
        g_beta = Z.T @ (self.R - p - 0.5 * w3 / A[codes] + (c / A)[codes] * (-w))
        del du_dbeta_num
        g_tau = np.sum(u**2 / sigma2 - 1.0 + 1.0 / (sigma2 * A) + c * 2 * u / (sigma2 * A))
        if tau != tau_raw:  # outside the box the objective is flat in log sigma
            g_tau = 0.0
        return float(-ll), -np.concatenate([g_beta, [g_tau]])

    def aghq(self, theta: np.ndarray) -> float:
        """Negative adaptive Gauss–Hermite log-likelihood (``n_quad`` nodes per cluster)."""
        beta, tau = theta[:-1], min(max(theta[-1], _LOG_SIGMA_BOUNDS[0]), _LOG_SIGMA_BOUNDS[1])
        sigma2 = math.exp(2 * tau)
        eta0 = self.Z @ beta
        u, _, A = self.modes(eta0, sigma2)
        s = 1.0 / np.sqrt(A)
        nodes = u[:, None] + s[:, None] * self.t[None, :]                 # (M, K)
        ell = np.zeros_like(nodes)
        for k in range(self.t.size):
            ell[:, k] = np.bincount(self.codes, weights=_bernoulli_loglik(self.R, eta0 + nodes[self.codes, k]),
                                    minlength=self.M)
        log_prior = -0.5 * math.log(2 * math.pi * sigma2) - nodes**2 / (2 * sigma2)
        terms = self.logw[None, :] + ell + log_prior
        ll = np.sum(np.log(s) + special.logsumexp(terms, axis=1))
        return float(-ll)


def _fit_random(R: np.ndarray, X: np.ndarray, names: list[str], codes: np.ndarray, uniques: np.ndarray,
                method: str, n_quad: int) -> PropensityFit:
    n, k = X.shape
    M = uniques.size
    Xs, mu, sd = _standardise(X) if k else (X, np.zeros(0), np.ones(0))
    Z = np.column_stack([np.ones(n), Xs])
    start, _, _ = _irls(Z, R, ridge=np.full(k + 1, 1e-6))
    obj = _RandomIntercept(R, Z, codes, M)
    x0 = np.concatenate([start, [math.log(0.5)]])
    bounds = [(None, None)] * (k + 1) + [_LOG_SIGMA_BOUNDS]
    # BFGS with the exact gradient (scipy's L-BFGS-B has a large per-iteration overhead here);
    # log sigma is clipped inside the objective, and a boundary value is reported as singular.
    res = optimize.minimize(obj.laplace, x0, jac=True, method="BFGS", options={"maxiter": 1000, "gtol": 1e-8})
    theta = res.x.copy()
    theta[-1] = min(max(theta[-1], _LOG_SIGMA_BOUNDS[0]), _LOG_SIGMA_BOUNDS[1])
    n_iter = int(res.nit)
    conv = bool(res.success) or np.max(np.abs(res.jac)) < 1e-4
    msg = str(res.message)
    cov = None
    if method == "aghq":
        obj_q = _RandomIntercept(R, Z, codes, M, n_quad=n_quad)
        obj_q.u = obj.u.copy()
        res_q = optimize.minimize(obj_q.aghq, theta, method="L-BFGS-B", bounds=bounds,
                                  options={"maxiter": 500, "ftol": 1e-14, "gtol": 1e-7, "eps": 1e-7})
        res_q.x = np.asarray(res_q.x)
        theta, n_iter = res_q.x, n_iter + int(res_q.nit)
        conv = bool(res_q.success)
        msg = f"Laplace start, then AGHQ({n_quad}): {res_q.message}"
        fval = float(res_q.fun)
        obj = obj_q
    else:
        # the observed information from finite differences of the exact gradient
        h = 1e-5
        q = theta.size
        H = np.zeros((q, q))
        for i in range(q):
            e = np.zeros(q)
            e[i] = h
            H[:, i] = (obj.laplace(theta + e)[1] - obj.laplace(theta - e)[1]) / (2 * h)
        H = (H + H.T) / 2
        obj.laplace(theta)  # leave the modes at the optimum
        try:
            cov_s = np.linalg.inv(H)
            J = np.zeros((q, q))  # Jacobian of (intercept, coef, log sigma) w.r.t. standardised params
            J[0, 0] = 1.0
            if k:
                J[0, 1:k + 1] = -mu / sd
                J[1:k + 1, 1:k + 1] = np.diag(1.0 / sd)
            J[-1, -1] = 1.0
            cov = J @ cov_s @ J.T
        except np.linalg.LinAlgError:
            cov = None
        fval = float(res.fun)
    sigma = math.exp(theta[-1])
    if theta[-1] <= _LOG_SIGMA_BOUNDS[0] + 1e-3:
        sigma = 0.0
        msg += "; singular fit: the random-intercept SD is estimated at 0 (no cluster effect in response)"
        warn("random-intercept propensity: the cluster SD is estimated at 0 (singular fit); the model "
             "reduces to plain logistic regression")
    elif theta[-1] >= _LOG_SIGMA_BOUNDS[1] - 1e-3:
        msg += "; the random-intercept SD hit its upper bound (near-separation of whole clusters)"
        warn("random-intercept propensity: the cluster SD is huge (hit the bound exp(4)); some clusters are "
             "(almost) entirely answered or entirely missing")
    if not conv:
        warn(f"random-intercept propensity did not converge: {msg}")
    sigma2 = max(sigma, math.exp(_LOG_SIGMA_BOUNDS[0])) ** 2
    eta0 = Z @ theta[:-1]
    u, p, _ = obj.modes(eta0, sigma2)
    if sigma == 0.0:
        u = np.zeros(M)
        p = special.expit(eta0)
    b0, coef = _unstandardise(theta[0], theta[1:-1], mu, sd)
    meth = "laplace" if method == "laplace" else f"aghq({n_quad})"
    return PropensityFit("random", meth, b0, coef, names, float(sigma), uniques, u, p, -fval, conv, n_iter,
                         msg, n, int(M), cov)


def propensity_fit(R: npt.ArrayLike, X: npt.ArrayLike | None = None, clusters: npt.ArrayLike | None = None, *,
                   kind: PropensityKind = "random", method: Literal["laplace", "aghq"] = "laplace",
                   n_quad: int = 15) -> PropensityFit:
    """Fit a model for the probability that an item has a gradable answer, ``P(R = 1 | x, cluster)``.

    ``kind="random"`` is the model of papers/000:
    ``logit P(R_gj = 1) = b0 + x_gj' b + u_g`` with ``u_g ~ N(0, sigma_u^2)``, fitted by maximum
    likelihood. The marginal likelihood of each cluster is approximated by Laplace's method (the
    same approximation as ``lme4::glmer(nAGQ = 1)``) or, with ``method="aghq"``, by adaptive
    Gauss–Hermite quadrature with ``n_quad`` nodes centred at the conditional mode. The modes are
    found by Newton's method vectorised over clusters; the outer optimisation is L-BFGS-B over
    ``(b, log sigma_u)`` with the exact gradient of the Laplace likelihood. Predictions use the
    conditional modes ``u_hat_g``, which shrink small clusters toward 0 and keep clusters where
    everything (or nothing) was answered finite.

    ``kind="fixed"`` gives each cluster its own intercept (unpenalised); a cluster where every or
    no item was answered is separated: its propensity is set to 1 or 0 with a warning.
    ``kind="logistic"`` ignores clusters.

    Paper: papers/000.

    Parameters
    ----------
    R : (n,) array of 0/1
        1 where the item has a gradable answer (``status == "ok"``).
    X : (n, k) array or DataFrame, optional
        Item features (difficulty, length, ...). An intercept is always added; do not include one.
        Features are standardised internally; coefficients are reported in the given units.
    clusters : (n,) labels, optional
        Required for ``kind="fixed"`` and ``"random"``.
    kind : {"logistic", "fixed", "random"}
    method : {"laplace", "aghq"}
        Only for ``kind="random"``.
    n_quad : int
        Quadrature nodes per cluster for ``method="aghq"`` (1 node is exactly Laplace).

    Returns
    -------
    PropensityFit

    Raises
    ------
    ValueError
        ``R`` not 0/1, all items answered or none answered (nothing to model), NaN or constant
        features, misaligned inputs, missing clusters for a clustered kind, or a random intercept
        with a single cluster (its SD is not identified).

    Warns
    -----
    EvalkitWarning
        Fewer than 5 clusters, a singular or bound-hitting random-intercept SD, separated clusters
        in the fixed-effect model, quasi-separation in the logistic model, non-convergence.
    """
    Rv = _as_response(R)
    n = Rv.size
    Xa, names = _as_features(X, n)
    if kind not in ("logistic", "fixed", "random"):
        raise ValueError(f"kind must be 'logistic', 'fixed' or 'random', got {kind!r}")
    if method not in ("laplace", "aghq"):
        raise ValueError(f"method must be 'laplace' or 'aghq', got {method!r}")
    if int(n_quad) < 1:
        raise ValueError(f"n_quad must be a positive number of nodes, got {n_quad}")
    n_obs = int(Rv.sum())
    if n_obs == 0:
        raise ValueError("no item was answered (R is all 0): a response propensity cannot be estimated, and "
                         "the accuracy is not identified; only the bounds [0, 1] remain")
    if n_obs == n:
        raise ValueError("every item was answered (R is all 1): there is no missingness to model; "
                         "use the complete-case estimate, which is the full-data estimate here")
    if clusters is None:
        if kind != "logistic":
            raise ValueError(f"kind={kind!r} needs clusters=; pass cluster labels or use kind='logistic'")
        codes, uniques = np.zeros(n, dtype=np.intp), np.array(["all"])
    else:
        codes, uniques = as_labels(clusters, n)
    M = uniques.size
    if kind == "logistic":
        return _fit_logistic(Rv, Xa, names, codes, uniques)
    if M < 2:
        raise ValueError(f"kind={kind!r} needs at least two clusters; with one cluster use kind='logistic'")
    if M < 5:
        warn(f"only {M} clusters: a cluster-level propensity is poorly determined with so few")
    if kind == "fixed":
        return _fit_fixed(Rv, Xa, names, codes, uniques)
    return _fit_random(Rv, Xa, names, codes, uniques, method, int(n_quad))


# --------------------------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Weights:
    """Inverse-propensity weights of the respondents, after truncation, with diagnostics.

    Attributes
    ----------
    w : (n_obs,) array
        Weights used (truncated). Hájek normalisation happens in the estimator
        (``sum w y / sum w``), so their scale is irrelevant.
    w_raw : (n_obs,) array
        ``1 / p`` before truncation.
    cap : float
        The truncation level (``inf`` when none).
    rule : str
        The truncation rule in words.
    max_weight : float
        Largest weight after truncation, relative to the mean weight.
    max_weight_raw : float
        Largest raw weight relative to the mean raw weight.
    ess : float
        Kish effective sample size ``(sum w)^2 / sum w^2`` of the truncated weights.
    ess_raw : float
    mass_cut : float
        Share of the raw weight mass removed by truncation, ``1 - sum w / sum w_raw``.
    n_capped : int
        Number of respondents whose weight was capped.
    """

    w: np.ndarray
    w_raw: np.ndarray
    cap: float
    rule: str
    max_weight: float
    max_weight_raw: float
    ess: float
    ess_raw: float
    mass_cut: float
    n_capped: int

    def summary(self) -> dict[str, float | int | str]:
        """The diagnostics as a dict (no arrays)."""
        return {"rule": self.rule, "cap": self.cap, "max_weight": self.max_weight,
                "max_weight_raw": self.max_weight_raw, "ess": self.ess, "ess_raw": self.ess_raw,
                "mass_cut": self.mass_cut, "n_capped": self.n_capped, "n": int(self.w.size)}


@dataclass(frozen=True, eq=False)
class MissingDetails:
    """What :func:`missing_report` stores in ``report.attrs["missing"]`` besides the table.

    Attributes
    ----------
    by_reason, by_cluster : DataFrame
        :func:`missing_breakdown` of the reported models.
    propensity : dict
        Model -> random-intercept :class:`PropensityFit`.
    weights : dict
        Model -> weight diagnostics (:meth:`Weights.summary`).
    """

    by_reason: pd.DataFrame
    by_cluster: pd.DataFrame
    propensity: dict
    weights: dict


def _kish(w: np.ndarray) -> float:
    return float(w.sum() ** 2 / np.sum(w**2))


def weights_compute(p: npt.ArrayLike, truncate: Truncation = None) -> Weights:
    """Inverse-propensity weights ``w = 1 / p`` of the respondents, optionally truncated.

    Truncation trades a little bias for a lot of variance when a few propensities are tiny
    (papers/000 recommends a cap at the 90–95% quantile, or of order ``sqrt(n)``).

    Paper: papers/000.

    Parameters
    ----------
    p : (n_obs,) array
        Fitted propensities of the items that *were* answered, in (0, 1].
    truncate : None, ("quantile", q), ("fixed", c) or "sqrt_n"
        * None: no truncation;
        * ``("quantile", q)``: cap at the ``q`` quantile of the raw weights, ``q`` in (0, 1]
          (0.90–0.99 are usual);
        * ``("fixed", c)``: cap at ``c`` (on the ``1/p`` scale, so ``c >= 1``);
        * ``"sqrt_n"``: cap the weights at ``sqrt(n_obs)`` times their mean, i.e. no respondent
          may stand for more than ``sqrt(n_obs)`` average respondents.

    Returns
    -------
    Weights

    Raises
    ------
    ValueError
        Propensities NaN, outside (0, 1], or exactly 0 (a respondent cannot have had probability 0
        of responding: the propensity model is separated; use a random intercept or truncation of
        a model that gives positive propensities); an unknown truncation rule.

    Warns
    -----
    EvalkitWarning
        A raw weight above 100 times the mean weight and no truncation.
    """
    pa = np.asarray(p, dtype=float)
    if pa.ndim != 1 or pa.size == 0:
        raise ValueError(f"p must be a non-empty one-dimensional array of propensities, got shape {pa.shape}")
    if np.isnan(pa).any():
        raise ValueError(f"p contains {int(np.isnan(pa).sum())} NaN propensities")
    if (pa <= 0).any():
        raise ValueError(
            f"{int((pa <= 0).sum())} respondents have propensity 0, so their inverse weight is infinite; the "
            "propensity model is separated (for example a cluster fixed effect at -inf). Use kind='random', "
            "drop the offending feature, or pass propensities bounded away from 0"
        )
    if (pa > 1).any():
        raise ValueError("propensities must be at most 1")
    w_raw = 1.0 / pa
    n = pa.size
    if truncate is None:
        cap, rule = math.inf, "none"
    elif isinstance(truncate, str):
        if truncate != "sqrt_n":
            raise ValueError(f"unknown truncation {truncate!r}; use None, 'sqrt_n', ('quantile', q) or ('fixed', c)")
        cap, rule = math.sqrt(n) * float(w_raw.mean()), "sqrt(n) x mean weight"
    elif isinstance(truncate, tuple) and len(truncate) == 2:
        how, val = truncate[0], float(truncate[1])
        if how == "quantile":
            if not 0.0 < val <= 1.0:
                raise ValueError(f"the truncation quantile must be in (0, 1], got {val}")
            cap, rule = float(np.quantile(w_raw, val)), f"quantile {val:g}"
        elif how == "fixed":
            if not val >= 1.0:
                raise ValueError(f"a fixed cap is on the 1/p scale and must be >= 1, got {val}")
            cap, rule = val, f"fixed cap {val:g}"
        else:
            raise ValueError(f"unknown truncation {how!r}; use 'quantile' or 'fixed'")
    else:
        raise ValueError(f"truncate must be None, 'sqrt_n', ('quantile', q) or ('fixed', c), got {truncate!r}")
    w = np.minimum(w_raw, cap)
    rel_raw = float(w_raw.max() / w_raw.mean())
    if truncate is None and rel_raw > 100:
        warn(f"the largest inverse-propensity weight is {rel_raw:.0f} times the mean; one item dominates the "
             "estimate. Consider truncate=('quantile', 0.95) and report the cut")
    return Weights(w, w_raw, float(cap), rule, float(w.max() / w.mean()), rel_raw, _kish(w), _kish(w_raw),
                   float(1.0 - w.sum() / w_raw.sum()), int(np.sum(w_raw > cap)), )


# --------------------------------------------------------------------------------------------
# estimators
# --------------------------------------------------------------------------------------------

def _prep(correct: npt.ArrayLike, clusters: npt.ArrayLike | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    y = np.asarray(correct, dtype=float)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"correct must be a non-empty 1-D array (0/1, NaN = missing), got shape {y.shape}")
    obs = ~np.isnan(y)
    if not np.isin(y[obs], (0.0, 1.0)).all():
        raise ValueError("correct must hold 0/1 where observed and NaN where missing")
    if not obs.any():
        raise ValueError("no outcome is observed (correct is all NaN): the accuracy is not identified; "
                         "only the bounds [0, 1] are available (missing_bounds)")
    clus = None if clusters is None else np.asarray(clusters)
    if clus is not None:
        as_labels(clus, y.size)
    return y, obs, clus


def missing_complete_case(correct: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                          se: Literal["iid", "CR0", "CR1", "CR2"] = "CR1", alpha: float = 0.05) -> Estimate:
    """Complete-case accuracy: the mean over answered items only (what most leaderboards report).

    Unbiased for the full-data accuracy only when missingness is unrelated to correctness (MCAR).

    Paper: papers/000.

    Parameters
    ----------
    correct : (n,) array
        0/1 outcomes, NaN where missing.
    clusters : (n,) labels, optional
        Needed for the cluster-robust kinds.
    se : {"iid", "CR0", "CR1", "CR2"}
    alpha : float

    Raises
    ------
    ValueError
        No observed outcome, non-0/1 values, or the errors of :func:`mean_estimate`.
    """
    y, obs, clus = _prep(correct, clusters)
    est = mean_estimate(y[obs], None if clus is None else clus[obs], se=se, alpha=alpha)
    return _relabel(est, f"complete case, {se}")


def _relabel(est: Estimate, method: str) -> Estimate:
    return Estimate(est.estimate, est.se, est.ci_low, est.ci_high, est.df, method, est.n, est.n_clusters)


def missing_bounds(correct: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                   se: Literal["iid", "CR0", "CR1", "CR2"] = "CR1", alpha: float = 0.05) -> tuple[Estimate, Estimate]:
    """Worst- and best-case accuracies: every missing answer counted wrong, or counted right.

    These Manski-style bounds need no assumption about why answers are missing; the full-data
    accuracy lies between them. Each comes with its own sampling interval over all ``n`` items.

    Paper: papers/000.

    Returns
    -------
    lower, upper : Estimate
        Missing-as-wrong and missing-as-right.
    """
    y = np.asarray(correct, dtype=float)
    if y.ndim != 1 or y.size == 0:
        raise ValueError("correct must be a non-empty 1-D array")
    clus = None if clusters is None else np.asarray(clusters)
    lo = mean_estimate(np.nan_to_num(y, nan=0.0), clus, se=se, alpha=alpha)
    hi = mean_estimate(np.nan_to_num(y, nan=1.0), clus, se=se, alpha=alpha)
    return _relabel(lo, f"missing as wrong, {se}"), _relabel(hi, f"missing as right, {se}")


_KIND_LABEL = {"logistic": "IPW logistic", "fixed": "IPW cluster fixed effects", "random": "IPW random intercept"}


def _ipw_parts(correct: npt.ArrayLike, clusters: npt.ArrayLike | None, features: npt.ArrayLike | None,
               p: npt.ArrayLike | None, kind: PropensityKind, method: str, truncate: Truncation,
               fit: PropensityFit | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                                          PropensityFit | None, Weights]:
    y, obs, clus = _prep(correct, clusters)
    if p is not None:
        pa = np.asarray(p, dtype=float)
        if pa.shape != y.shape:
            raise ValueError(f"p has shape {pa.shape}, correct {y.shape}; give a propensity for every item")
        fit_out = None
    else:
        if obs.all():
            raise ValueError("every item was answered: no weighting is needed; use missing_complete_case")
        fit_out = fit if fit is not None else propensity_fit(obs.astype(float), features, clus, kind=kind,
                                                            method=method)  # type: ignore[arg-type]
        pa = fit_out.p
    W = weights_compute(pa[obs], truncate)
    return y, obs, clus, fit_out, W


def ipw_estimate(correct: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                 features: npt.ArrayLike | None = None, p: npt.ArrayLike | None = None,
                 kind: PropensityKind = "random", method: Literal["laplace", "aghq"] = "laplace",
                 truncate: Truncation = None, se: Literal["iid", "CR0", "CR1", "CR2"] = "CR1",
                 alpha: float = 0.05) -> Estimate:
    """Inverse-probability-weighted (Hájek) accuracy with a cluster-robust interval.

    ``theta_hat = sum_j R_j w_j y_j / sum_j R_j w_j`` with ``w_j = 1 / p_hat_j`` from a propensity
    model (:func:`propensity_fit`, a random-intercept logistic model by default). Its variance is
    the cluster-robust sandwich of :func:`evalkit.clustered.mean_estimate` (CR1 or CR2, ``t`` with
    ``M - 1`` degrees of freedom over the clusters that have respondents). This variance treats the
    weights as known; :func:`ipw_bootstrap` also includes their estimation error.

    Paper: papers/000.

    Parameters
    ----------
    correct : (n,) array
        0/1 outcomes for every item, NaN where the answer is missing.
    clusters : (n,) labels, optional
        Needed for clustered propensities and cluster-robust SEs.
    features : (n, k) array or DataFrame, optional
        Propensity features (NaN is refused).
    p : (n,) array, optional
        Known or externally fitted propensities; skips the propensity fit.
    kind : {"logistic", "fixed", "random"}
    method : {"laplace", "aghq"}
    truncate : see :func:`weights_compute`
    se : {"iid", "CR0", "CR1", "CR2"}
    alpha : float

    Returns
    -------
    Estimate

    Raises
    ------
    ValueError
        Nothing observed, everything observed (use the complete-case estimate), bad propensities,
        and the errors of :func:`propensity_fit` and :func:`mean_estimate`.
    """
    check_alpha(alpha)
    y, obs, clus, fit, W = _ipw_parts(correct, clusters, features, p, kind, method, truncate)
    est = mean_estimate(y[obs], None if clus is None else clus[obs], weights=W.w, se=se, alpha=alpha)
    label = "IPW (given p)" if p is not None else _KIND_LABEL[kind]
    if truncate is not None:
        label += f" [{W.rule}]"
    return _relabel(est, f"{label}, {se}")


def ipw_compare(correct_a: npt.ArrayLike, correct_b: npt.ArrayLike, clusters: npt.ArrayLike, *,
                p_a: npt.ArrayLike | None = None, p_b: npt.ArrayLike | None = None,
                features: npt.ArrayLike | None = None, kind: PropensityKind = "random",
                method: Literal["laplace", "aghq"] = "laplace", truncate: Truncation = None,
                se: Literal["CR0", "CR1", "CR2"] = "CR1", alpha: float = 0.05) -> Estimate:
    """Difference of two models' IPW accuracies on the same items, with a paired cluster-robust interval.

    Each model gets its own propensity model and Hájek weights. The two estimating equations are
    stacked, so the variance of ``theta_a - theta_b`` uses per-cluster contributions
    ``U_g = sum_j [R_aj w_aj (y_aj - theta_a) / W_a - R_bj w_bj (y_bj - theta_b) / W_b]``, which
    keeps the pairing through shared items and clusters. With no missing outcomes and unit weights
    it equals :func:`evalkit.clustered.paired_estimate`. CR2 uses the average leverage of the two
    models' clusters (exact when both have the same weights).

    Paper: papers/000.

    Parameters
    ----------
    correct_a, correct_b : (n,) arrays
        Outcomes (NaN = missing) of the two models on the same items in the same order.
    clusters : (n,) labels
    p_a, p_b : (n,) arrays, optional
        Propensities; fitted with ``kind`` when omitted. ``p = 1`` everywhere (``np.ones(n)``)
        gives the complete-case comparison.
    features, kind, method, truncate, se, alpha
        As in :func:`ipw_estimate`.

    Raises
    ------
    ValueError
        Different lengths, fewer than two clusters, and the errors of :func:`ipw_estimate`.
    """
    check_alpha(alpha)
    ya = np.asarray(correct_a, dtype=float)
    yb = np.asarray(correct_b, dtype=float)
    if ya.shape != yb.shape:
        raise ValueError(f"the two models have {ya.shape} and {yb.shape} outcomes; they must share the items")
    codes, uniques = as_labels(clusters, ya.size)
    M = uniques.size
    if M < 2:
        raise ValueError("only one cluster: the cluster-robust variance of a comparison needs at least two")
    if se not in ("CR0", "CR1", "CR2"):
        raise ValueError(f"se must be CR0, CR1 or CR2 for a comparison, got {se!r}")
    parts = []
    for y, p in ((ya, p_a), (yb, p_b)):
        pp = None if p is None else p
        if pp is None and not np.isnan(y).any():
            pp = np.ones(y.size)
        yy, obs, _, _, W = _ipw_parts(y, clusters, features, pp, kind, method, truncate)
        w_all = np.zeros(yy.size)
        w_all[obs] = W.w
        Wt = float(w_all.sum())
        theta = float(np.dot(w_all[obs], yy[obs]) / Wt)
        score = np.zeros(yy.size)
        score[obs] = w_all[obs] * (yy[obs] - theta) / Wt
        lev = np.bincount(codes, weights=w_all, minlength=M) / Wt
        parts.append((theta, score, lev))
    (ta, sa, la), (tb, sb, lb) = parts
    lev = (la + lb) / 2
    var = cluster_scores_variance(sa - sb, codes, M, 1.0, se, lev)
    s = math.sqrt(var)
    lo, hi = interval_t(ta - tb, s, M - 1, alpha)
    lab = "difference, IPW (given p)" if p_a is not None else f"difference, {_KIND_LABEL[kind]}"
    return Estimate(ta - tb, s, lo, hi, float(M - 1), f"{lab}, {se}", int(ya.size), int(M))


def ipw_bootstrap(correct: npt.ArrayLike, clusters: npt.ArrayLike, *, features: npt.ArrayLike | None = None,
                  kind: PropensityKind = "random", method: Literal["laplace", "aghq"] = "laplace",
                  truncate: Truncation = None, n_boot: int = 999, seed: int | np.random.Generator,
                  alpha: float = 0.05, progress: bool = False) -> Estimate:
    """Cluster bootstrap of the IPW accuracy that refits the propensity model in every resample.

    Whole clusters are resampled with replacement (a cluster drawn twice enters the
    random-intercept fit as two clusters), the propensity model is refitted and the Hájek estimate
    recomputed. The spread therefore includes the estimation error of the weights, which the
    sandwich of :func:`ipw_estimate` ignores: use it as the reference interval.

    Paper: papers/000.

    Parameters
    ----------
    correct, clusters, features, kind, method, truncate
        As in :func:`ipw_estimate`.
    n_boot : int
    seed : int or Generator
    alpha : float
    progress : bool

    Returns
    -------
    Estimate
        Percentile interval; see :func:`evalkit.clustered.bootstrap_cluster`.
    """
    y, obs, clus = _prep(correct, clusters)
    if clus is None:
        raise ValueError("the cluster bootstrap needs clusters=")
    Xa, names = _as_features(features, y.size)

    def stat(rows: np.ndarray, ids: np.ndarray) -> float:
        r = obs[rows]
        if r.all() or not r.any():
            yy = y[rows][r]
            if not r.any():
                raise ValueError("no respondents in the resample")
            return float(yy.mean())
        X = Xa[rows] if Xa.shape[1] else None
        if X is not None and np.any(X.std(axis=0) == 0):
            raise ValueError("a feature is constant in this resample")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = propensity_fit(r.astype(float), X, ids, kind=kind, method=method)
            W = weights_compute(fit.p[r], truncate)
        return float(np.dot(W.w, y[rows][r]) / W.w.sum())

    est = bootstrap_cluster(stat, clus, n_boot=n_boot, seed=seed, alpha=alpha, progress=progress)
    return _relabel(est, f"{_KIND_LABEL[kind]}, {est.method}")


# --------------------------------------------------------------------------------------------
# sensitivity analysis
# --------------------------------------------------------------------------------------------

def _outcome_predictions(correct: np.ndarray, clusters: np.ndarray | None, features: npt.ArrayLike | None,
                         kind: PropensityKind) -> np.ndarray:
    """``P(Y = 1 | x, cluster)`` for every item from a model fitted on the answered items (MAR)."""
    y = np.asarray(correct, dtype=float)
    obs = ~np.isnan(y)
    Xa, _ = _as_features(features, y.size)
    yo = y[obs]
    if yo.min() == yo.max():
        return np.full(y.size, float(yo[0]))
    Xo = Xa[obs] if Xa.shape[1] else None
    use_kind = kind if clusters is not None else "logistic"
    if use_kind != "logistic" and clusters is not None and np.unique(clusters[obs]).size < 2:
        use_kind = "logistic"
    if Xo is not None and np.any(Xo.std(axis=0) == 0):
        raise ValueError("a feature is constant among the answered items; drop it")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = propensity_fit(yo, Xo, None if clusters is None else clusters[obs], kind=use_kind)
    Xall = Xa if Xa.shape[1] else None
    if use_kind == "logistic":
        return fit.predict(Xall, np.zeros(y.size) if Xall is None else None) if Xall is not None else \
            np.full(y.size, float(special.expit(fit.intercept)))
    eff = fit.cluster_effect
    if kind == "fixed":
        eff = np.clip(eff, -15, 15)
        fit = PropensityFit(fit.kind, fit.method, fit.intercept, fit.coef, fit.feature_names, fit.sigma_u,
                            fit.cluster_labels, eff, fit.p, fit.loglik, fit.converged, fit.n_iter, fit.message,
                            fit.n, fit.n_clusters, fit.cov)
    return fit.predict(Xall if Xall is not None else None, clusters) if Xall is not None else \
        fit.predict(None, clusters)


def _imputed_values(y: np.ndarray, m: np.ndarray, delta: float) -> np.ndarray:
    v = y.copy()
    miss = np.isnan(y)
    v[miss] = special.expit(special.logit(np.clip(m[miss], 1e-12, 1 - 1e-12)) + delta)
    return v


def sensitivity_delta(correct: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                      correct_b: npt.ArrayLike | None = None, features: npt.ArrayLike | None = None,
                      deltas: npt.ArrayLike | None = None, apply_to: Literal["a", "b", "both"] = "a",
                      kind: PropensityKind = "random", se: Literal["iid", "CR1", "CR2"] = "CR1",
                      alpha: float = 0.05) -> pd.DataFrame:
    """Delta-adjusted MNAR sensitivity analysis for one model's accuracy or a two-model difference.

    Under MAR, a missing answer is correct with the probability ``m(x, cluster)`` that a comparable
    *answered* item is (a random-intercept logistic outcome model fitted on the answered items).
    The MNAR departure shifts the non-responders' log-odds of being correct by ``delta``:
    ``logit P(Y = 1 | missing) = logit m + delta``. ``delta < 0`` says the unanswered items would
    more often have been wrong (refusing hard questions). The full-data accuracy is the mean of
    the observed outcomes and the imputed probabilities; its interval is the cluster-robust
    interval of that per-item mean (it treats the outcome model as known). ``delta = 0`` is the
    MAR outcome-model estimate, close to IPW.

    With ``correct_b`` the quantity is the paired difference ``A - B`` and ``apply_to`` says whose
    missing answers are shifted.

    Paper: papers/000.

    Parameters
    ----------
    correct : (n,) array
        Model A's outcomes (NaN = missing).
    clusters : (n,) labels, optional
    correct_b : (n,) array, optional
        Model B's outcomes on the same items.
    features : (n, k), optional
        Outcome-model features.
    deltas : array, optional
        Log-odds shifts to evaluate (default: 25 values from -3 to 3).
    apply_to : {"a", "b", "both"}
    kind : {"logistic", "fixed", "random"}
        Outcome model.
    se : {"iid", "CR1", "CR2"}
    alpha : float

    Returns
    -------
    DataFrame
        One row per ``delta``: ``delta, estimate, se, ci_low, ci_high``; ``attrs`` records the
        setting (``quantity``, ``apply_to``).
    """
    check_alpha(alpha)
    ya, obs_a, clus = _prep(correct, clusters)
    ma = _outcome_predictions(ya, clus, features, kind) if not obs_a.all() else ya
    yb = mb = None
    if correct_b is not None:
        yb, obs_b, _ = _prep(correct_b, clusters)
        if yb.shape != ya.shape:
            raise ValueError("correct and correct_b must cover the same items")
        mb = _outcome_predictions(yb, clus, features, kind) if not obs_b.all() else yb
    if apply_to not in ("a", "b", "both"):
        raise ValueError("apply_to must be 'a', 'b' or 'both'")
    rows = []
    grid = np.linspace(-3.0, 3.0, 25) if deltas is None else np.asarray(deltas, dtype=float)
    for d in grid:
        da = d if apply_to in ("a", "both") else 0.0
        va = _imputed_values(ya, ma, da)
        if yb is None:
            v = va
        else:
            db = d if apply_to in ("b", "both") else 0.0
            v = va - _imputed_values(yb, mb, db)  # type: ignore[arg-type]
        est = mean_estimate(v, clus, se=se, alpha=alpha, binary=False)
        rows.append({"delta": float(d), "estimate": est.estimate, "se": est.se, "ci_low": est.ci_low,
                     "ci_high": est.ci_high})
    out = pd.DataFrame(rows)
    out.attrs.update(quantity="accuracy" if yb is None else "difference", apply_to=apply_to, se=se, alpha=alpha)
    return out


def sensitivity_tipping_point(table: pd.DataFrame, *, reference: float | None = None,
                              criterion: Literal["interval", "estimate"] = "interval") -> dict[str, Any]:
    """The smallest shifts ``delta`` (negative and positive) at which the conclusion changes.

    The conclusion at ``delta`` compares the result with ``reference`` (default 0 for a
    difference, required for an accuracy, e.g. a competitor's score or a release threshold):
    with ``criterion="interval"`` it is "above" (``ci_low > reference``), "below"
    (``ci_high < reference``) or "undecided"; with ``"estimate"`` it is the side of the point
    estimate. The tipping points are found by linear interpolation between grid values, walking
    away from ``delta = 0``.

    Paper: papers/000.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`sensitivity_delta` (must contain ``delta = 0`` or bracket it).
    reference : float, optional
    criterion : {"interval", "estimate"}

    Returns
    -------
    dict
        ``conclusion_at_0``, ``delta_low`` (the largest negative delta that flips it, or None),
        ``delta_high`` (the smallest positive one, or None), ``reference``, ``criterion``.
    """
    if reference is None:
        if table.attrs.get("quantity") == "accuracy":
            raise ValueError("for one model's accuracy give reference= (the value the conclusion is about)")
        reference = 0.0
    if criterion not in ("interval", "estimate"):
        raise ValueError("criterion must be 'interval' or 'estimate'")
    t = table.sort_values("delta").reset_index(drop=True)
    d = t["delta"].to_numpy(dtype=float)
    if not (d.min() <= 0 <= d.max()):
        raise ValueError("the delta grid must include 0 (or bracket it)")

    def side(lo: float, est: float, hi: float) -> str:
        if criterion == "estimate":
            return "above" if est > reference else "below"
        return "above" if lo > reference else ("below" if hi < reference else "undecided")

    cols = {c: t[c].to_numpy(dtype=float) for c in ("ci_low", "estimate", "ci_high")}
    at0 = {c: float(np.interp(0.0, d, v)) for c, v in cols.items()}
    c0 = side(at0["ci_low"], at0["estimate"], at0["ci_high"])

    def crossing(order: np.ndarray) -> float | None:
        prev_d, prev = 0.0, at0
        for i in order:
            cur = {c: float(cols[c][i]) for c in cols}
            if side(cur["ci_low"], cur["estimate"], cur["ci_high"]) != c0:
                key = {"above": "ci_low", "below": "ci_high"}.get(c0, None) if criterion == "interval" else "estimate"
                if key is None:  # undecided at 0: the bound that crossed the reference
                    key = "ci_low" if cur["ci_low"] > reference else "ci_high"
                a, b = prev[key] - reference, cur[key] - reference
                frac = a / (a - b) if a != b else 1.0
                return float(prev_d + frac * (d[i] - prev_d))
            prev_d, prev = float(d[i]), cur
        return None

    neg = np.flatnonzero(d < 0)[::-1]
    pos = np.flatnonzero(d > 0)
    return {"conclusion_at_0": c0, "delta_low": crossing(neg), "delta_high": crossing(pos),
            "reference": float(reference), "criterion": criterion}


def sensitivity_plot(table: pd.DataFrame, *, reference: float | None = None, tipping: dict | None = None,
                     ax: Any = None, label: str | None = None, scale: float = 100.0) -> Any:
    """Plot the estimate and its interval against ``delta`` with the reference and tipping points.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`sensitivity_delta`.
    reference : float, optional
        Horizontal line (0 for differences by default).
    tipping : dict, optional
        Output of :func:`sensitivity_tipping_point`; its deltas are marked.
    ax : matplotlib Axes, optional
    label : str, optional
    scale : float
        Multiply the y values (100 = accuracy points).

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    d = table["delta"].to_numpy()
    ax.fill_between(d, table["ci_low"] * scale, table["ci_high"] * scale, alpha=0.25, label="95% interval")
    ax.plot(d, table["estimate"] * scale, lw=2, label=label or "estimate")
    if reference is None and table.attrs.get("quantity") == "difference":
        reference = 0.0
    if reference is not None:
        ax.axhline(reference * scale, color="k", lw=0.8, ls="--")
    if tipping:
        for key in ("delta_low", "delta_high"):
            if tipping.get(key) is not None:
                ax.axvline(tipping[key], color="C3", lw=1, ls=":")
                ax.annotate(f"tips at {tipping[key]:.2f}", (tipping[key], ax.get_ylim()[1]), fontsize=8,
                            ha="center", va="top", color="C3")
    ax.axvline(0, color="grey", lw=0.6)
    ax.set_xlabel(r"$\delta$: shift of the log-odds of a missing answer being correct")
    ax.set_ylabel("difference (points)" if table.attrs.get("quantity") == "difference" else "accuracy (points)")
    ax.legend(loc="best", fontsize=8)
    return ax


# --------------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------------

def missing_breakdown(long_df: pd.DataFrame, *, cluster: str = "cluster") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Missingness by reason and by cluster, per model.

    Parameters
    ----------
    long_df : DataFrame
        An evalkit long table.
    cluster : str
        Column holding the clusters.

    Returns
    -------
    by_reason : DataFrame
        ``model, status, n, share`` (every status present, including ``ok``).
    by_cluster : DataFrame
        ``model, cluster, n, n_missing, missing_rate`` and one count column per missing reason.
    """
    df = long_df
    if cluster not in df.columns:
        raise ValueError(f"no column {cluster!r} in the long table")
    by_reason = (df.groupby(["model", "status"], sort=True).size().rename("n").reset_index())
    by_reason["share"] = by_reason["n"] / by_reason.groupby("model")["n"].transform("sum")
    tab = pd.crosstab([df["model"], df[cluster]], df["status"])
    reasons = [c for c in tab.columns if c != "ok"]
    by_cluster = pd.DataFrame({"n": tab.sum(axis=1), "n_missing": tab[reasons].sum(axis=1) if reasons else 0})
    by_cluster["missing_rate"] = by_cluster["n_missing"] / by_cluster["n"]
    for r in reasons:
        by_cluster[r] = tab[r]
    by_cluster = by_cluster.reset_index().rename(columns={cluster: "cluster"})
    return by_reason, by_cluster


def missing_features(
    long_df: pd.DataFrame, *, model: str, texts: pd.Series | None = None, lengths: pd.Series | None = None
) -> pd.DataFrame:
    """Item features for a propensity model: accuracy among the *other* models, question length.

    Paper: papers/000 (item difficulty and length as propensity features).

    Parameters
    ----------
    long_df : DataFrame
        Long table with several models on the same items.
    model : str
        The model whose missingness is being modelled; its own answers are left out of the
        difficulty feature (otherwise it would leak the outcome into the propensity).
    texts : Series, optional
        Question text indexed by item id; adds ``log_length = log(1 + characters)``.
    lengths : Series, optional
        The same from the question lengths in characters, indexed by item id (for example
        ``dataset_items(name).set_index("item")["question_chars"]``: evalkit carries lengths, not
        texts). Give ``texts`` or ``lengths``, not both.

    Returns
    -------
    DataFrame
        Indexed by item: ``acc_others`` (mean correctness of the other models' gradable answers;
        items no other model answered get the overall mean, with a warning) and, with ``texts``
        or ``lengths``, ``log_length``.

    Raises
    ------
    ValueError
        Unknown model, a table with a single model, both ``texts`` and ``lengths``, or items
        without a text or length.
    """
    df = long_df
    if model not in set(df["model"]):
        raise ValueError(f"model {model!r} is not in the table")
    if df["model"].nunique() < 2:
        raise ValueError("the table has a single model: 'accuracy among the other models' needs at least two")
    y = df["correct"].to_numpy(dtype=float)
    ok = ~np.isnan(y)
    tot = pd.DataFrame({"item": df["item"].to_numpy(), "s": np.where(ok, y, 0.0), "c": ok.astype(float)})
    mine = (df["model"] == model).to_numpy()
    all_ = tot.groupby("item", sort=False)[["s", "c"]].sum()
    own = tot[mine].groupby("item", sort=False)[["s", "c"]].sum()
    items = pd.Index(df.loc[mine, "item"].unique(), name="item")
    s = all_["s"].reindex(items) - own["s"].reindex(items)
    c = all_["c"].reindex(items) - own["c"].reindex(items)
    acc = (s / c.where(c > 0)).rename("acc_others")
    if acc.isna().any():
        overall = float(np.nansum(np.where(~mine & ok, y, 0.0)) / max(1, np.sum(~mine & ok)))
        warn(f"{int(acc.isna().sum())} items were answered by no other model; their acc_others is the overall mean")
        acc = acc.fillna(overall)
    out = pd.DataFrame({"acc_others": acc})
    if texts is not None and lengths is not None:
        raise ValueError("give texts or lengths, not both")
    if texts is not None or lengths is not None:
        lens = (texts.astype(str).str.len() if texts is not None else pd.Series(lengths)).reindex(items)
        if lens.isna().any():
            raise ValueError(f"{int(lens.isna().sum())} items have no {'text' if texts is not None else 'length'}")
        out["log_length"] = np.log1p(lens.to_numpy(dtype=float))
    return out


def _row(model: str, name: str, est: Estimate, **extra: Any) -> dict[str, Any]:
    d = {"model": model, "estimator": name, "estimate": est.estimate, "se": est.se, "ci_low": est.ci_low,
         "ci_high": est.ci_high, "width": est.width, "df": est.df, "n": est.n, "n_clusters": est.n_clusters}
    d.update(extra)
    return d


def missing_report(long_df: pd.DataFrame, *, features: Sequence[str] | None = None, cluster: str = "cluster",
                   model: str | None = None, compare: tuple[str, str] | None = None,
                   truncate: Truncation = ("quantile", 0.99), n_boot: int = 0, seed: int = 0,
                   guess_rate: float | None = None, method: Literal["laplace", "aghq"] = "laplace",
                   alpha: float = 0.05) -> pd.DataFrame:
    """Every missing-data estimator of one model's accuracy (or a two-model comparison), side by side.

    The one call to take an eval log with missing answers through: it validates the long table,
    then reports complete-case accuracy (i.i.d., CR1, CR2), the missing-as-wrong and
    missing-as-right bounds, optionally the scorer's random-guess replacement, IPW with a plain
    logistic propensity and with a random-intercept propensity (CR1, CR2), and optionally the
    cluster bootstrap refitting the propensity. Each row carries its SE, ``1 - alpha`` interval
    and the empirical design effect ``V_cluster / V_iid`` of that estimator; the model-level ICC of
    the observed outcomes (ANOVA), the design effect ``1 + (m_bar - 1) rho``, the effective n, the
    response rate, the latent ICC of *missingness* implied by the random-intercept propensity, and
    the weight diagnostics are columns too.

    Paper: papers/000.

    Parameters
    ----------
    long_df : DataFrame
        evalkit long table (``model, item, cluster, correct, status`` + feature columns).
    features : sequence of str, optional
        Columns used as propensity features (and outcome-model features in sensitivity). NaN in a
        feature raises: impute it first.
    cluster : str
        Column to cluster on (e.g. ``"cluster"``, ``"src"``, ``"category"``).
    model : str, optional
        Which model to report when the table has several (not needed with one model).
    compare : (str, str), optional
        Report both models and their difference (A - B) on the shared items.
    truncate : see :func:`weights_compute`
        Applied to the IPW rows (default: cap at the 99% quantile).
    n_boot : int
        Cluster bootstrap resamples for an extra IPW row (0 = skip; 999 for a final report).
    seed : int
        Seed of the bootstrap.
    guess_rate : float, optional
        Add a row counting each missing answer as correct with this probability (e.g. 0.1 for
        MMLU-Pro's random-guess replacement of unparsable answers).
    method : {"laplace", "aghq"}
        Random-intercept fitting method.
    alpha : float

    Returns
    -------
    DataFrame
        One row per (model, estimator). ``attrs["missing"]`` is a :class:`MissingDetails` with
        the breakdown by reason and by cluster (:func:`missing_breakdown`), the fitted
        random-intercept :class:`PropensityFit` per model and the weight diagnostics.

    Raises
    ------
    ValueError
        Invalid long table, unknown model, duplicated items, missing or NaN feature columns,
        fewer than two clusters.
    """
    check_alpha(alpha)
    df = long_validate(long_df)
    if cluster != "cluster":
        if cluster not in long_df.columns:
            raise ValueError(f"no column {cluster!r} to cluster on")
        df["cluster"] = long_df[cluster].astype(str).to_numpy()
    feats = list(features or [])
    for f in feats:
        if f not in df.columns:
            raise ValueError(f"feature column {f!r} is not in the long table")
    models_all = sorted(df["model"].unique())
    if compare is not None:
        if len(compare) != 2 or compare[0] == compare[1]:
            raise ValueError("compare must name two different models")
        models = list(compare)
    elif model is not None:
        models = [model]
    elif len(models_all) == 1:
        models = models_all
    else:
        raise ValueError(f"the table has {len(models_all)} models; pass model= or compare=(a, b)")
    for m in models:
        if m not in models_all:
            raise ValueError(f"model {m!r} is not in the table (it has {models_all[:5]}...)")
    sub = df[df["model"].isin(models)]
    by_reason, by_cluster = missing_breakdown(sub, cluster="cluster")

    rows: list[dict[str, Any]] = []
    fits: dict[str, PropensityFit] = {}
    wdiag: dict[str, dict] = {}
    per_model: dict[str, pd.DataFrame] = {}
    for m in models:
        d = sub[sub["model"] == m].sort_values("item").reset_index(drop=True)
        per_model[m] = d
        y = d["correct"].to_numpy(dtype=float)
        obs = ~np.isnan(y)
        cl = d["cluster"].to_numpy()
        if not obs.any():
            raise ValueError(f"model {m!r} has no gradable answer; only the bounds [0, 1] are available")
        X = d[feats] if feats else None
        if X is not None and X.isna().any().any():
            bad = X.columns[X.isna().any()].tolist()
            raise ValueError(f"feature columns {bad} have NaN for model {m!r}; impute them before the report")
        M_obs = np.unique(cl[obs]).size
        info: dict[str, Any] = {"response_rate": float(obs.mean())}
        yo, co = y[obs], cl[obs]
        try:
            rho = icc_anova(yo, co)
            mbar = yo.size / M_obs
            deff = deff_from_icc(mbar, float(np.clip(rho, 0, 1)))
            info.update(icc=rho, deff=deff, n_eff=n_effective(yo.size, deff))
        except ValueError:
            info.update(icc=np.nan, deff=np.nan, n_eff=np.nan)

        def dfe(yv: np.ndarray, cv: np.ndarray, w: np.ndarray | None = None) -> float:
            try:
                return deff_empirical(yv, cv, weights=w)
            except ValueError:
                return float("nan")

        s: SEKind
        for s in ("iid", "CR1", "CR2"):
            rows.append(_row(m, f"complete case, {s}", missing_complete_case(y, cl, se=s, alpha=alpha),
                             deff_emp=dfe(yo, co), **info))
        lo, hi = missing_bounds(y, cl, se="CR1", alpha=alpha)
        rows.append(_row(m, "missing as wrong, CR1", lo, deff_emp=dfe(np.nan_to_num(y), cl), **info))
        rows.append(_row(m, "missing as right, CR1", hi, deff_emp=dfe(np.nan_to_num(y, nan=1.0), cl), **info))
        if guess_rate is not None:
            if not 0 <= guess_rate <= 1:
                raise ValueError("guess_rate must be a probability")
            v = np.where(obs, y, guess_rate)
            g = mean_estimate(v, cl, se="CR1", alpha=alpha, binary=False)
            rows.append(_row(m, f"missing as guess ({guess_rate:g}), CR1", g, deff_emp=dfe(v, cl), **info))
        if obs.all():
            warn(f"model {m!r}: every item was answered; the IPW rows equal the complete-case rows")
            for name in ("IPW logistic, CR1", "IPW random intercept, CR1", "IPW random intercept, CR2"):
                rows.append(_row(m, name, missing_complete_case(y, cl, se=name[-3:], alpha=alpha),  # type: ignore[arg-type]
                                 deff_emp=dfe(yo, co), **info))
            continue
        fit_l = propensity_fit(obs.astype(float), X, cl, kind="logistic")
        W = weights_compute(fit_l.p[obs], truncate)
        est = mean_estimate(yo, co, weights=W.w, se="CR1", alpha=alpha)
        rows.append(_row(m, "IPW logistic, CR1", est, deff_emp=dfe(yo, co, W.w), ess=W.ess, mass_cut=W.mass_cut,
                         max_weight=W.max_weight, **info))
        fit_r = propensity_fit(obs.astype(float), X, cl, kind="random", method=method)
        fits[m] = fit_r
        W = weights_compute(fit_r.p[obs], truncate)
        wdiag[m] = W.summary()
        info_r = dict(info, icc_missing_latent=icc_latent(fit_r.sigma_u), sigma_u=fit_r.sigma_u)
        for s in ("CR1", "CR2"):
            est = mean_estimate(yo, co, weights=W.w, se=s, alpha=alpha)
            rows.append(_row(m, f"IPW random intercept, {s}", est, deff_emp=dfe(yo, co, W.w), ess=W.ess,
                             mass_cut=W.mass_cut, max_weight=W.max_weight, **info_r))
        if n_boot:
            b = ipw_bootstrap(y, cl, features=X, kind="random", method=method, truncate=truncate,
                              n_boot=n_boot, seed=seed, alpha=alpha)
            rows.append(_row(m, "IPW random intercept, cluster bootstrap", b, **info_r))

    if compare is not None:
        df_a, df_b = (per_model[k] for k in compare)
        both = df_a[["item", "cluster", "correct"]].merge(df_b[["item", "correct"]], on="item", suffixes=("_a", "_b"))
        if len(both) == 0:
            raise ValueError("the two models share no items")
        ya, yb, cl = (both["correct_a"].to_numpy(dtype=float), both["correct_b"].to_numpy(dtype=float),
                      both["cluster"].to_numpy())
        lab = f"{compare[0]} - {compare[1]}"
        ones = np.ones(len(both))
        rows.append(_row(lab, "complete case, CR1", ipw_compare(ya, yb, cl, p_a=ones, p_b=ones, se="CR1", alpha=alpha)))
        la, ha = missing_bounds(ya, cl)
        lb, hb = missing_bounds(yb, cl)
        rows.append({"model": lab, "estimator": "bounds (worst A - best B, best A - worst B)",
                     "ci_low": la.estimate - hb.estimate, "ci_high": ha.estimate - lb.estimate,
                     "estimate": np.nan, "n": len(both), "n_clusters": np.unique(cl).size})
        Xab = None
        if feats:
            Xab = df_a.set_index("item").loc[both["item"], feats].to_numpy(dtype=float)
        kind_: PropensityKind
        for kind_ in ("logistic", "random"):
            pa = _p_or_ones(ya, Xab, cl, kind_, method)
            pb = _p_or_ones(yb, Xab, cl, kind_, method)
            cr_kinds: tuple[Literal["CR1", "CR2"], ...] = ("CR1",) if kind_ == "logistic" else ("CR1", "CR2")
            for cr in cr_kinds:
                est = ipw_compare(ya, yb, cl, p_a=pa, p_b=pb, truncate=truncate, se=cr, alpha=alpha)
                rows.append(_row(lab, f"{_KIND_LABEL[kind_]}, {cr}", est))
    out = pd.DataFrame(rows)
    # one object (compared by identity), so that pd.concat of several reports works
    out.attrs["missing"] = MissingDetails(by_reason, by_cluster, fits, wdiag)
    return out


def _p_or_ones(y: np.ndarray, X: np.ndarray | None, cl: np.ndarray, kind: PropensityKind, method: str) -> np.ndarray:
    obs = ~np.isnan(y)
    if obs.all():
        return np.ones(y.size)
    return propensity_fit(obs.astype(float), X, cl, kind=kind, method=method).p  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# the simulation study of METHODS.md section 1
# --------------------------------------------------------------------------------------------

def _study_estimators(data: pd.DataFrame, n_boot: int, seed: int, truncate: Truncation = None) -> dict[str, Estimate]:
    y = data["correct"].to_numpy(dtype=float)
    cl = data["cluster"].to_numpy()
    x = data["x"].to_numpy(dtype=float)[:, None]
    obs = ~np.isnan(y)
    out: dict[str, Estimate] = {}
    out["CC iid"] = missing_complete_case(y, cl, se="iid")
    out["CC CR1"] = missing_complete_case(y, cl, se="CR1")
    if obs.all():
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_l = propensity_fit(obs.astype(float), x, cl, kind="logistic")
        out["IPW logistic iid"] = ipw_estimate(y, cl, p=fit_l.p, se="iid", truncate=truncate)
        fit_r = propensity_fit(obs.astype(float), x, cl, kind="random")
        out["IPW RI CR1"] = ipw_estimate(y, cl, p=fit_r.p, se="CR1", truncate=truncate)
        out["IPW RI CR2"] = ipw_estimate(y, cl, p=fit_r.p, se="CR2", truncate=truncate)
        if n_boot:
            out["IPW RI bootstrap"] = ipw_bootstrap(y, cl, features=x, n_boot=n_boot, seed=seed, truncate=truncate)
    return out


_STUDY_ESTIMATORS = ("CC iid", "CC CR1", "IPW logistic iid", "IPW RI CR1", "IPW RI CR2")


def _study_one(args: tuple) -> pd.DataFrame:
    from .montecarlo import mc_run
    from .simulate import simulate_clustered, simulate_missing

    scen, n_reps, seed, n_boot, truncate = args

    def sim(rng: np.random.Generator) -> pd.DataFrame:
        d = simulate_clustered(n_clusters=scen["n_clusters"], cluster_size=scen["cluster_size"],
                               mean=scen["mean"], icc=scen["icc"], rng=rng, beta_x=scen["beta_x"])
        return simulate_missing(d, mechanism=scen["mechanism"], response_rate=scen["response_rate"],
                                strength=scen["strength"], rng=rng)

    names = list(_STUDY_ESTIMATORS) + (["IPW RI bootstrap"] if n_boot else [])
    cache: dict[str, Any] = {"data": None, "est": {}}

    def make(name: str) -> Callable[[pd.DataFrame], Estimate]:
        def f(data: pd.DataFrame) -> Estimate:
            if cache["data"] is not data:
                cache["data"] = data
                cache["est"] = _study_estimators(data, n_boot, seed, truncate)
            if name not in cache["est"]:
                raise ValueError(f"{name} not available (no missing outcomes)")
            return cache["est"][name]
        return f

    runs = mc_run(sim, {nm: make(nm) for nm in names}, truth=float(scen["mean"]), n_reps=n_reps, seed=seed,
                  progress=False)
    for k, v in scen.items():
        if k in ("mechanism", "icc", "n_clusters"):
            runs[k] = v
    return runs


def missing_study(*, n_reps: int = 1000, seed: int = 2025, mechanisms: Sequence[str] = ("mcar", "mar",
                  "mnar_cluster", "mnar_item"), iccs: Sequence[float] = (0.02, 0.2),
                  n_clusters: Sequence[int] = (20, 100), n_items: int = 1000, mean: float = 0.5,
                  response_rate: float = 0.8, strength: float = 1.5, beta_x: float = 1.0, n_boot: int = 0,
                  truncate: Truncation = None, n_jobs: int = 1) -> pd.DataFrame:
    """Run the simulation study of papers/000 (METHODS.md section 1) and return the raw replications.

    Scenarios are the grid mechanisms x ICC x number of clusters (``n_items`` items split evenly
    into the clusters). In every replication one model's outcomes are drawn with
    :func:`evalkit.simulate.simulate_clustered` (item covariate effect ``beta_x``), answers are
    hidden with :func:`evalkit.simulate.simulate_missing`, and the estimators ``CC iid``, ``CC
    CR1``, ``IPW logistic iid`` (propensity on ``x`` only, i.i.d. interval), ``IPW RI CR1`` and
    ``IPW RI CR2`` (random-intercept propensity on ``x``) are scored against the expected accuracy
    ``mean`` (the accuracy on the population of items the benchmark samples), plus ``IPW RI
    bootstrap`` when ``n_boot > 0`` (slow). Summarise with
    :func:`evalkit.montecarlo.mc_summarise`.

    Paper: papers/000.

    Parameters
    ----------
    n_reps : int
        Replications per scenario (1,000 for the full study).
    seed : int
    mechanisms, iccs, n_clusters : sequences
        The grid.
    n_items, mean, response_rate, strength, beta_x : numbers
        Fixed design values.
    n_boot : int
        Bootstrap resamples per replication for the bootstrap estimator (0 = skip).
    truncate : see :func:`weights_compute`
        Weight truncation of the IPW estimators.
    n_jobs : int
        Worker processes (scenarios are distributed over them).

    Returns
    -------
    DataFrame
        :func:`evalkit.montecarlo.mc_run` output with columns ``mechanism, icc, n_clusters``.
    """
    scens = []
    for k, (mech, icc, M) in enumerate((a, b, c) for a in mechanisms for b in iccs for c in n_clusters):
        if n_items % M:
            raise ValueError(f"n_items={n_items} must be a multiple of every n_clusters (got {M})")
        scens.append(({"mechanism": mech, "icc": float(icc), "n_clusters": int(M), "cluster_size": n_items // M,
                       "mean": mean, "response_rate": response_rate, "strength": strength, "beta_x": beta_x},
                      n_reps, seed + 1000 * k, n_boot, truncate))
    if n_jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(n_jobs) as ex:
            parts = list(ex.map(_study_one, scens))
    else:
        parts = [_study_one(s) for s in scens]
    return pd.concat(parts, ignore_index=True)
