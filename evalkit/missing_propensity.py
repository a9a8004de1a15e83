"""Response-propensity models for missing answers: plain, cluster fixed-effect and random-intercept logistic.

``propensity_fit`` models ``P(R = 1 | x, cluster)``, the probability that an item has a gradable
answer, for the inverse-probability weights of :mod:`evalkit.missing`. The random-intercept model
``logit P(R_gj = 1) = b0 + x_gj' b + u_g``, ``u_g ~ N(0, sigma_u^2)`` is fitted by maximum
likelihood with the Laplace approximation or adaptive Gauss–Hermite quadrature (AGHQ), with exact
gradients for both, and convergence is declared only when the gradient test passes.

Paper: [MISSING] (Handling Missing Responses under Cluster Dependence with Applications to
Language Model Evaluation). Taught in ``notebooks/02.1-missing-responses-mechanisms-and-ipw.ipynb`` (the fit) and
``notebooks/02.2-missing-responses-propensity-checks-and-report.ipynb`` (the checks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import optimize, special

from ._checks import as_labels, as_probabilities, check_int, check_same_label_kind, label_kind, warn
from .clustered import _calibration_bins
from .errors import EvalkitInputError

__all__ = ["PropensityDiagnostics", "PropensityFit", "PropensityKind", "propensity_diagnostics", "propensity_fit"]

PropensityKind = Literal["logistic", "fixed", "random"]

_LOG_SIGMA_BOUNDS = (-7.0, 4.0)  # sigma_u in [0.0009, 55]: the lower end means "no cluster effect"
_MODE_STEP_MAX = 2.0  # damping of the Newton steps for the conditional modes
_SEPARATION_ETA = 25.0  # |linear predictor| beyond which a fitted propensity is numerically 0 or 1
_GRAD_TOL = 1e-6  # convergence: largest |gradient| of the log-likelihood (standardised parameters) ...
_DECREMENT_TOL = 1e-9  # ... or the Newton decrement g'H^{-1}g / 2 (log-likelihood still to gain)

# --------------------------------------------------------------------------------------------
# input helpers
# --------------------------------------------------------------------------------------------

def _as_response(R: npt.ArrayLike) -> np.ndarray:
    r = np.asarray(R)
    if r.ndim != 1:
        raise EvalkitInputError(
            "R", f"R must be one-dimensional (one response indicator per item), got shape {r.shape}")
    if r.size == 0:
        raise EvalkitInputError("R", "R is empty")
    r = r.astype(float)
    if np.isnan(r).any():
        raise EvalkitInputError("R", "R contains NaN; it must be 1 (a gradable answer) or 0 (missing) for every item")
    if not np.isin(r, (0.0, 1.0)).all():
        raise EvalkitInputError("R", "R must hold only 0/1 (1 = the item has a gradable answer)")
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
        raise EvalkitInputError("features", f"features must be an (n_items, n_features) array, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise EvalkitInputError(
            "features", f"features have {arr.shape[0]} rows but there are {n} items; they must align")
    bad = ~np.isfinite(arr)
    if bad.any():
        cols = [names[k] for k in np.flatnonzero(bad.any(axis=0))]
        raise EvalkitInputError("features",
            f"features contain {int(bad.sum())} NaN/infinite values (columns {cols}); impute them "
            "(for example with the column mean plus a 0/1 'was missing' indicator column) before fitting"
        )
    sd = arr.std(axis=0)
    const = [names[k] for k in np.flatnonzero(sd == 0)]
    if const and check_constant:
        raise EvalkitInputError("features", f"features {const} are constant; they duplicate the intercept, drop them")
    return arr, names


def _log_expit(eta: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -eta)


def _bernoulli_loglik(R: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Per-item ``R log p + (1 - R) log(1 - p)`` with ``p = expit(eta)``, computed stably."""
    return -np.logaddexp(0.0, np.where(R > 0.5, -eta, eta))


def _prep(correct: npt.ArrayLike, clusters: npt.ArrayLike | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    y = np.asarray(correct, dtype=float)
    if y.ndim != 1 or y.size == 0:
        raise EvalkitInputError(
            "correct", f"correct must be a non-empty 1-D array (0/1, NaN = missing), got shape {y.shape}")
    obs = ~np.isnan(y)
    if not np.isin(y[obs], (0.0, 1.0)).all():
        raise EvalkitInputError("correct", "correct must hold 0/1 where observed and NaN where missing")
    if not obs.any():
        raise EvalkitInputError(
            "correct", "no outcome is observed (correct is all NaN): the accuracy is not identified; "
                         "only the bounds [0, 1] are available (missing_bounds)")
    clus = None if clusters is None else np.asarray(clusters)
    if clus is not None:
        as_labels(clus, y.size)
    return y, obs, clus


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
        Whether the optimiser's convergence test passed: for ``random`` the largest absolute
        gradient of the log-likelihood (in standardised parameters) is below 1e-6 or the Newton
        decrement ``g' H^{-1} g / 2`` (the log-likelihood still to gain) is below 1e-9; for
        ``logistic`` and ``fixed`` the Newton step is below 1e-10. Never True under separation of
        the features (no finite maximum exists).
    n_iter : int
    message : str
        Optimiser message and any caveats (singular fit, separation).
    n, n_clusters : int
    cov : (k + 2, k + 2) array or None
        Approximate covariance of ``(intercept, coef, log sigma_u)`` from the observed
        information (random intercept only; None when the information is not positive definite).
    separated : bool
        Separation: the likelihood has no finite maximum in some direction. ``fixed``: a cluster
        with every or no item answered (its intercept is +/-inf); ``logistic``, ``fixed`` and
        ``random``: fitted propensities numerically 0 or 1 (the features predict response
        almost perfectly); ``random``: the cluster SD at its upper bound. Always with a warning
        and a ``"separation: ..."`` part in ``message``.
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
    separated: bool = False

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
                raise EvalkitInputError("X", f"X has {Xa.shape[1]} features but the fit used {self.coef.size}")
            m = Xa.shape[0]
            eta = self.intercept + Xa @ self.coef
        elif self.coef.size:
            raise EvalkitInputError("X", "this fit uses features: pass X")
        if clusters is not None:
            lab = np.asarray(clusters)
            if lab.ndim != 1:
                raise EvalkitInputError("clusters", f"clusters must be one-dimensional, got shape {lab.shape}")
            if self.kind != "logistic":
                check_same_label_kind(label_kind(self.cluster_labels), lab, "clusters")
            m = lab.shape[0] if m is None else m
            if lab.shape[0] != m:
                raise EvalkitInputError("clusters", "clusters and X must have the same number of rows")
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
            raise EvalkitInputError("clusters", "this fit has cluster effects: pass clusters (or conditional=False)")
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
    """Newton–Raphson for logistic regression on design ``Z`` (with step halving).

    Converged when the Newton step is below ``tol`` in every coordinate. Under separation the
    coefficients grow without bound and the log-likelihood creeps toward 0: that is never
    reported as convergence (the callers also flag the separation itself).
    """
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
        beta, f = cand, fc
        if np.max(np.abs(t * step)) < tol:
            return beta, it, True
    return beta, max_iter, False


def _separation(eta: np.ndarray, kind: str) -> str | None:
    """The separation caveat (message part) when fitted propensities are numerically 0 or 1, else None."""
    with np.errstate(invalid="ignore"):
        big = np.isfinite(eta) & (np.abs(eta) > _SEPARATION_ETA)
    if not big.any():
        return None
    n0, n1 = int(np.sum(big & (eta < 0))), int(np.sum(big & (eta > 0)))
    return (f"separation: {n1 + n0} fitted propensities are numerically 1 ({n1}) or 0 ({n0}); the features "
            f"predict response almost perfectly, so the {kind} propensity has no finite maximum and inverse "
            "weights are extreme or infinite")


def _report_separation(kind: str, caveat: str) -> None:
    warn(f"{kind} propensity: {caveat}. Drop or coarsen the separating feature, use kind='random' (whose "
         "conditional modes stay finite), or report the bounds")


def _fit_logistic(R: np.ndarray, X: np.ndarray, names: list[str], codes: np.ndarray,
                  uniques: np.ndarray) -> PropensityFit:
    n, k = X.shape
    Xs, mu, sd = _standardise(X) if k else (X, np.zeros(0), np.ones(0))
    Z = np.column_stack([np.ones(n), Xs])
    beta, it, conv = _irls(Z, R)
    eta = Z @ beta
    parts = ["converged" if conv else "IRLS did not converge"]
    sep = _separation(eta, "logistic")
    if sep:
        conv = False
        parts.append(sep)
        _report_separation("logistic", sep)
    b0, coef = _unstandardise(beta[0], beta[1:], mu, sd)
    return PropensityFit("logistic", "irls", b0, coef, names, 0.0, uniques, np.zeros(uniques.size),
                         special.expit(eta), float(_bernoulli_loglik(R, eta).sum()), conv, it, "; ".join(parts), n,
                         int(uniques.size), separated=sep is not None)


def _fit_fixed(R: np.ndarray, X: np.ndarray, names: list[str], codes: np.ndarray,
               uniques: np.ndarray) -> PropensityFit:
    n, k = X.shape
    M = uniques.size
    n_g = np.bincount(codes, minlength=M)
    r_g = np.bincount(codes, weights=R, minlength=M)
    all_obs = r_g == n_g
    none_obs = r_g == 0
    sep = all_obs | none_obs
    caveats = []
    if sep.any():
        parts = []
        if all_obs.any():
            parts.append(f"{int(all_obs.sum())} cluster(s) have every item answered (e.g. "
                         f"{[str(v) for v in uniques[all_obs][:5]]}): intercept +inf, propensity exactly 1, weight 1")
        if none_obs.any():
            parts.append(f"{int(none_obs.sum())} cluster(s) have no item answered (e.g. "
                         f"{[str(v) for v in uniques[none_obs][:5]]}): intercept -inf, propensity exactly 0, so no "
                         "answered item can stand for them")
        caveats.append("separation: " + "; ".join(parts))
        warn(f"fixed propensity: {caveats[-1]}. kind='random' keeps every cluster's propensity finite")
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
    feat_sep = _separation(eta[keep], "fixed") if keep.any() else None
    if feat_sep:
        conv = False
        caveats.append(feat_sep)
        _report_separation("fixed", feat_sep)
    ll = float(_bernoulli_loglik(R[keep], eta[keep]).sum()) if keep.any() else 0.0
    msg = "; ".join(["converged" if conv else "IRLS did not converge", *caveats])
    return PropensityFit("fixed", "irls", b0, coef, names, 0.0, uniques, eff, p, ll, conv, it, msg, n, int(M),
                         separated=bool(caveats))


class _RandomIntercept:
    """Laplace / adaptive Gauss–Hermite marginal likelihood of a random-intercept logistic model.

    Both return the negative log-likelihood and its exact gradient in ``(beta, log sigma)``: the
    conditional modes ``u_g`` and the curvatures ``A_g`` (hence the AGHQ nodes
    ``u_g + t_k / sqrt(A_g)``) depend on the parameters, and the gradient includes that dependence
    through the implicit-function derivatives ``du/dbeta = -sum_j w_j x_j / A`` and
    ``du/dlog sigma = 2 u / (sigma^2 A)``. With one node AGHQ is exactly Laplace.
    """

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
        for _ in range(200):
            p = special.expit(eta0 + u[codes])
            grad = self.r_g - np.bincount(codes, weights=p, minlength=M) - u / sigma2
            A = np.bincount(codes, weights=p * (1 - p), minlength=M) + 1.0 / sigma2
            step = np.clip(grad / A, -_MODE_STEP_MAX, _MODE_STEP_MAX)
            u = u + step
            if np.max(np.abs(step)) < 1e-12 * max(1.0, float(np.max(np.abs(u)))):
                break
        p = special.expit(eta0 + u[codes])
        A = np.bincount(codes, weights=p * (1 - p), minlength=M) + 1.0 / sigma2
        self.u = u
        return u, p, A

    def laplace(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Negative Laplace log-likelihood and its exact gradient in ``(beta, log sigma)``."""
        return self._marginal(theta, np.zeros(1), np.array([0.5 * math.log(2 * math.pi)]))

    def aghq(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Negative adaptive Gauss–Hermite log-likelihood (``n_quad`` nodes per cluster) and its exact gradient."""
        return self._marginal(theta, self.t, self.logw)

    def _marginal(self, theta: np.ndarray, t: np.ndarray, logw: np.ndarray) -> tuple[float, np.ndarray]:
        beta, tau_raw = theta[:-1], float(theta[-1])
        tau = min(max(tau_raw, _LOG_SIGMA_BOUNDS[0]), _LOG_SIGMA_BOUNDS[1])
        sigma2 = math.exp(2 * tau)
        codes, M, Z, R = self.codes, self.M, self.Z, self.R
        eta0 = Z @ beta
        u, p, A = self.modes(eta0, sigma2)
        w = p * (1 - p)
        w3 = w * (1 - 2 * p)
        D1 = np.bincount(codes, weights=w3, minlength=M)            # dA/du
        s = 1.0 / np.sqrt(A)
        nodes = u[:, None] + s[:, None] * t[None, :]                 # (M, K)
        K = t.size
        ell = np.empty((M, K))
        for k in range(K):
            ell[:, k] = np.bincount(codes, weights=_bernoulli_loglik(R, eta0 + nodes[codes, k]), minlength=M)
        terms = logw[None, :] + ell - 0.5 * math.log(2 * math.pi * sigma2) - nodes**2 / (2 * sigma2)
        top = terms.max(axis=1)
        ex = np.exp(terms - top[:, None])
        tot = ex.sum(axis=1)
        ll = float(np.sum(np.log(s) + top + np.log(tot)))
        pi = ex / tot[:, None]                                       # node weights in each cluster
        direct = np.zeros(R.size)                                    # sum_k pi (R - p_k), per item
        G = np.empty((M, K))                                         # d(ell + log prior)/d node
        for k in range(K):
            resid = R - special.expit(eta0 + nodes[codes, k])
            direct += pi[codes, k] * resid
            G[:, k] = np.bincount(codes, weights=resid, minlength=M) - nodes[:, k] / sigma2
        a = np.sum(pi * G, axis=1)                                   # multiplies du/dtheta
        b = np.sum(pi * G * t[None, :], axis=1)                      # multiplies ds/dtheta
        # beta: du/dbeta = -sum_j w_j z_j / A; dA/dbeta = sum_j (w3_j - D1 w_j / A) z_j;
        # ds/dbeta = -A^{-3/2} dA/dbeta / 2 and dlog s/dbeta = -dA/dbeta / (2 A)
        dA_item = w3 - (D1 / A)[codes] * w
        mult = direct - (a / A)[codes] * w + (-0.5 * b * A**-1.5 - 0.5 / A)[codes] * dA_item
        g_beta = Z.T @ mult
        if tau != tau_raw:  # outside the box the objective is flat in log sigma
            g_tau = 0.0
        else:
            du_dtau = 2 * u / (sigma2 * A)
            dA_dtau = D1 * du_dtau - 2.0 / sigma2
            g_tau = float(np.sum(-0.5 * dA_dtau / A + np.sum(pi * (nodes**2 / sigma2 - 1.0), axis=1)
                                 + a * du_dtau - 0.5 * b * A**-1.5 * dA_dtau))
        return -ll, -np.concatenate([g_beta, [g_tau]])


def _hessian(fg: Callable[[np.ndarray], tuple[float, np.ndarray]], theta: np.ndarray) -> np.ndarray:
    """Observed information: central differences of the exact gradient, symmetrised."""
    q = theta.size
    H = np.zeros((q, q))
    for i in range(q):
        e = np.zeros(q)
        e[i] = 1e-5
        H[:, i] = (fg(theta + e)[1] - fg(theta - e)[1]) / 2e-5
    return (H + H.T) / 2


def _converged(g: np.ndarray, H: np.ndarray) -> tuple[bool, np.ndarray | None]:
    """The gradient test, and the Newton step when the information is positive definite."""
    try:
        L = np.linalg.cholesky(H)
        step = np.linalg.solve(L.T, np.linalg.solve(L, g))
    except np.linalg.LinAlgError:
        step = None
    small = bool(np.max(np.abs(g)) < _GRAD_TOL)
    if step is not None:
        small = small or bool(0.5 * float(g @ step) < _DECREMENT_TOL)
    return small, step


def _minimise(fg: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray) -> tuple[
        np.ndarray, float, np.ndarray | None, int, bool, str]:
    """BFGS on the exact gradient, then Newton steps (observed information) until the gradient test passes.

    ``log sigma`` (the last coordinate) outside its box is held at the bound. Returns the
    optimum, the objective, the observed information (None if not computed), the number of
    iterations, whether the gradient test passed, and a message.
    """
    res = optimize.minimize(fg, x0, jac=True, method="BFGS", options={"maxiter": 1000, "gtol": 1e-7})
    theta = np.asarray(res.x, dtype=float)
    theta[-1] = min(max(theta[-1], _LOG_SIGMA_BOUNDS[0]), _LOG_SIGMA_BOUNDS[1])
    n_iter = int(res.nit)
    f, g = fg(theta)
    H = None
    conv = False
    for _ in range(30):
        at_bound = theta[-1] <= _LOG_SIGMA_BOUNDS[0] + 1e-9 or theta[-1] >= _LOG_SIGMA_BOUNDS[1] - 1e-9
        free = np.arange(theta.size - 1) if at_bound else np.arange(theta.size)
        H = _hessian(fg, theta)
        conv, step = _converged(g[free], H[np.ix_(free, free)])
        if conv:
            break
        full = np.zeros(theta.size)
        full[free] = step if step is not None else g[free]
        t, moved = 1.0, False
        while t > 1e-10:
            cand = theta - t * full
            cand[-1] = min(max(cand[-1], _LOG_SIGMA_BOUNDS[0]), _LOG_SIGMA_BOUNDS[1])
            fc, gc = fg(cand)
            if fc < f:
                theta, f, g, moved = cand, fc, gc, True
                break
            t /= 2
        n_iter += 1
        if not moved:
            break
    fg(theta)  # leave the conditional modes at the optimum
    gmax = float(np.max(np.abs(g[:-1] if at_bound else g)))
    msg = (f"converged (BFGS, then Newton; largest |gradient| {gmax:.1e})" if conv else
           f"did not converge: largest |gradient| {gmax:.1e} after {n_iter} iterations ({res.message})")
    return theta, float(f), H, n_iter, conv, msg


def _fit_random(R: np.ndarray, X: np.ndarray, names: list[str], codes: np.ndarray, uniques: np.ndarray,
                method: str, n_quad: int) -> PropensityFit:
    n, k = X.shape
    M = uniques.size
    Xs, mu, sd = _standardise(X) if k else (X, np.zeros(0), np.ones(0))
    Z = np.column_stack([np.ones(n), Xs])
    start, _, _ = _irls(Z, R, ridge=np.full(k + 1, 1e-6))
    obj = _RandomIntercept(R, Z, codes, M)
    x0 = np.concatenate([start, [math.log(0.5)]])
    theta, fval, H, n_iter, conv, msg = _minimise(obj.laplace, x0)
    msg = f"Laplace: {msg}"
    if method == "aghq":
        # Start from the Laplace optimum and its modes. With (near-)separated data (a huge cluster
        # SD or propensities numerically 0/1 at the Laplace optimum) the AGHQ likelihood can have
        # several local maxima, so then also start from log sigma moved by -2 and +1, and from the
        # plain logistic fit with log sigma -1 and 1, and keep the best optimum.
        obj_q = _RandomIntercept(R, Z, codes, M, n_quad=n_quad)
        u_lap = obj.u.copy()
        starts = [theta.copy()]
        eta_lap = Z @ theta[:-1] + u_lap[codes]
        if theta[-1] > math.log(5.0) or np.max(np.abs(eta_lap)) > _SEPARATION_ETA:
            starts += [np.r_[theta[:-1], theta[-1] - 2.0], np.r_[theta[:-1], theta[-1] + 1.0],
                       np.r_[start, -1.0], np.r_[start, 1.0]]
        best = None
        for k_start, start_q in enumerate(starts):
            obj_q.u = u_lap.copy() if k_start < 3 else np.zeros(M)
            start_q[-1] = min(max(start_q[-1], _LOG_SIGMA_BOUNDS[0]), _LOG_SIGMA_BOUNDS[1])
            cand = _minimise(obj_q.aghq, start_q)
            n_iter += cand[3]
            if best is None or cand[1] < best[1] - 1e-9:
                best = cand
        assert best is not None
        theta, fval, H, _, conv, msg_q = best
        obj_q.aghq(theta)  # leave the modes at the chosen optimum
        extra = f" ({len(starts) - 1} more starts: near-separation)" if len(starts) > 1 else ""
        msg = f"Laplace start{extra}, then AGHQ({n_quad}): {msg_q}"
        obj = obj_q
    cov = None
    if H is not None:
        try:
            np.linalg.cholesky(H)
            J = np.zeros_like(H)  # Jacobian of (intercept, coef, log sigma) w.r.t. standardised params
            J[0, 0] = 1.0
            if k:
                J[0, 1:k + 1] = -mu / sd
                J[1:k + 1, 1:k + 1] = np.diag(1.0 / sd)
            J[-1, -1] = 1.0
            cov = J @ np.linalg.inv(H) @ J.T
        except np.linalg.LinAlgError:
            cov = None
    sigma = math.exp(theta[-1])
    separated = False
    if theta[-1] <= _LOG_SIGMA_BOUNDS[0] + 1e-3:
        sigma = 0.0
        msg += "; singular fit: the random-intercept SD is estimated at 0 (no cluster effect in response)"
        warn("random-intercept propensity: the cluster SD is estimated at 0 (singular fit); the model "
             "reduces to plain logistic regression")
    elif theta[-1] >= _LOG_SIGMA_BOUNDS[1] - 1e-3:
        separated = True
        caveat = ("separation: the random-intercept SD hit its upper bound exp(4); some clusters are (almost) "
                  "entirely answered or entirely missing")
        msg += f"; {caveat}"
        _report_separation("random-intercept", caveat)
    sigma2 = max(sigma, math.exp(_LOG_SIGMA_BOUNDS[0])) ** 2
    eta0 = Z @ theta[:-1]
    u, p, _ = obj.modes(eta0, sigma2)
    if sigma == 0.0:
        u = np.zeros(M)
        p = special.expit(eta0)
    # the fixed part only: propensities near 1 in clusters with a large mode are not separation
    feat_sep = _separation(eta0, "random-intercept")
    if feat_sep and not separated:
        separated = True
        msg += f"; {feat_sep}"
        _report_separation("random-intercept", feat_sep)
    if not conv:
        warn(f"random-intercept propensity did not converge: {msg}")
    b0, coef = _unstandardise(theta[0], theta[1:-1], mu, sd)
    meth = "laplace" if method == "laplace" else f"aghq({n_quad})"
    return PropensityFit("random", meth, b0, coef, names, float(sigma), uniques, u, p, -fval, conv, n_iter,
                         msg, n, int(M), cov, separated)


def propensity_fit(R: npt.ArrayLike, X: npt.ArrayLike | None = None, clusters: npt.ArrayLike | None = None, *,
                   kind: PropensityKind = "random", method: Literal["laplace", "aghq"] = "laplace",
                   n_quad: int = 15) -> PropensityFit:
    """Fit a model for the probability that an item has a gradable answer, ``P(R = 1 | x, cluster)``.

    ``kind="random"`` is the model of [MISSING]:
    ``logit P(R_gj = 1) = b0 + x_gj' b + u_g`` with ``u_g ~ N(0, sigma_u^2)``, fitted by maximum
    likelihood. The marginal likelihood of each cluster is approximated by Laplace's method (the
    same approximation as ``lme4::glmer(nAGQ = 1)``) or, with ``method="aghq"``, by adaptive
    Gauss–Hermite quadrature with ``n_quad`` nodes centred at the conditional mode (as
    ``glmer(nAGQ = n_quad)``). Predictions use the conditional modes ``u_hat_g``, which shrink
    small clusters toward 0 and keep clusters where everything (or nothing) was answered finite.

    **Optimisers.** ``logistic`` and ``fixed``: Newton–Raphson (IRLS) with step halving, converged
    when the Newton step is below 1e-10. ``random``: the conditional modes by Newton's method
    vectorised over clusters; the outer problem over ``(b, log sigma_u)`` by BFGS on the *exact*
    gradient (implicit-function derivatives through the modes and, for AGHQ, through the node
    positions), then Newton steps on the observed information (central differences of the exact
    gradient) until the gradient test passes: largest absolute gradient below 1e-6 or the
    log-likelihood still to gain (Newton decrement) below 1e-9. ``method="aghq"`` runs the same
    optimiser on the AGHQ likelihood, started from the Laplace optimum and its modes. A fit that
    fails the test is returned with ``converged=False`` and a warning, never reported as converged.

    ``kind="fixed"`` gives each cluster its own intercept (unpenalised); a cluster where every or
    no item was answered is separated: its propensity is set to 1 or 0 with a warning.
    ``kind="logistic"`` ignores clusters. Separation is reported the same way for every kind
    (``separated=True``, a ``"separation: ..."`` message and a warning): see :class:`PropensityFit`.

    Paper: [MISSING]. Taught in ``notebooks/02.1-missing-responses-mechanisms-and-ipw.ipynb``.

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
        Fewer than 5 clusters, a singular random-intercept SD, separation (any kind),
        non-convergence.

    Examples
    --------
    >>> import evalkit as ek
    >>> d = ek.simulate_clustered(n_clusters=20, cluster_size=30, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    >>> d = ek.simulate_missing(d, mechanism="mar_cluster", response_rate=0.8, strength=1.5, rng=2)
    >>> fit = ek.propensity_fit(d["correct"].notna(), d[["x"]], d["cluster"], kind="random")
    >>> fit.converged, fit.separated
    (True, False)
    >>> round(fit.sigma_u, 2)
    0.91
    """
    Rv = _as_response(R)
    n = Rv.size
    Xa, names = _as_features(X, n)
    if kind not in ("logistic", "fixed", "random"):
        raise EvalkitInputError("kind", f"kind must be 'logistic', 'fixed' or 'random', got {kind!r}")
    if method not in ("laplace", "aghq"):
        raise EvalkitInputError("method", f"method must be 'laplace' or 'aghq', got {method!r}")
    n_quad = check_int(n_quad, "n_quad", minimum=1)
    n_obs = int(Rv.sum())
    if n_obs == 0:
        raise EvalkitInputError(
            "R", "no item was answered (R is all 0): a response propensity cannot be estimated, and "
                         "the accuracy is not identified; only the bounds [0, 1] remain")
    if n_obs == n:
        raise EvalkitInputError("R", "every item was answered (R is all 1): there is no missingness to model; "
                         "use the complete-case estimate, which is the full-data estimate here")
    if clusters is None:
        if kind != "logistic":
            raise EvalkitInputError(
                "kind", f"kind={kind!r} needs clusters=; pass cluster labels or use kind='logistic'")
        codes, uniques = np.zeros(n, dtype=np.intp), np.array(["all"])
    else:
        codes, uniques = as_labels(clusters, n)
    M = uniques.size
    if kind == "logistic":
        return _fit_logistic(Rv, Xa, names, codes, uniques)
    if M < 2:
        raise EvalkitInputError(
            "kind", f"kind={kind!r} needs at least two clusters; with one cluster use kind='logistic'")
    if M < 5:
        warn(f"only {M} clusters: a cluster-level propensity is poorly determined with so few")
    if kind == "fixed":
        return _fit_fixed(Rv, Xa, names, codes, uniques)
    return _fit_random(Rv, Xa, names, codes, uniques, method, int(n_quad))


# --------------------------------------------------------------------------------------------
# model checks of a fitted propensity
# --------------------------------------------------------------------------------------------

_OVERLAP_P_MIN = 0.05  # a respondent with a fitted propensity below this carries a weight above 20
_BALANCE_SMD_MAX = 0.1  # the usual threshold for a standardised mean difference after weighting
_CALIB_Z_MAX = 3.0  # a calibration bin more than 3 binomial SEs from its mean propensity


@dataclass
class PropensityDiagnostics:
    """Model checks of a fitted response propensity, to read before the IPW estimate is believed.

    Attributes
    ----------
    overlap : DataFrame
        One row per response group (``answered``, ``missing``): ``n`` and the quantiles of the
        fitted propensities (min, 5%, median, 95%, max). Positivity needs the answered items'
        propensities to stay away from 0: their inverse is the weight.
    balance : DataFrame
        One row per feature (and, with clusters, one summary row ``clusters (largest share gap)``):
        the mean over all items (the target), over the answered items unweighted and weighted by
        ``1 / p``, and the standardised mean differences ``(mean - target) / sd(all items)`` before
        and after weighting. If the propensity model is right, the weighted answered items look like
        all items: ``|smd_weighted|`` small.
    calibration : DataFrame
        Items grouped into bins of fitted propensity (quantiles): ``n``, mean fitted propensity,
        observed response rate, its binomial SE and ``z`` (the gap in SEs).
    problems : list of str
        One sentence per failed check (empty when every check passes).
    figure : matplotlib Figure
        Three panels: the propensities by response group, balance before/after weighting, and the
        calibration curve.
    """

    overlap: pd.DataFrame
    balance: pd.DataFrame
    calibration: pd.DataFrame
    problems: list[str]
    figure: object = field(repr=False, default=None)

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.problems


def propensity_diagnostics(R: npt.ArrayLike, p: npt.ArrayLike | PropensityFit, X: npt.ArrayLike | None = None,
                           clusters: npt.ArrayLike | None = None, *, n_bins: int = 10,
                           plot: bool = True) -> PropensityDiagnostics:
    """Overlap, covariate balance after weighting and calibration of a fitted response propensity.

    Three checks to run before an inverse-probability-weighted estimate is interpreted:

    * **overlap (positivity)**: the distribution of the fitted propensities among answered and
      missing items. An answered item with ``p`` near 0 gets a huge weight ``1/p``; missing items
      with propensities no answered item has are extrapolated. Flagged when an answered item has
      ``p < 0.05`` (a weight above 20).
    * **balance**: weighting the answered items by ``1/p`` should reproduce the mean of every
      feature (and the cluster shares) over all items. Flagged when a weighted standardised mean
      difference exceeds 0.1 in absolute value. Balance on the features used in the model is a
      check of the fit, not of the missing-at-random assumption, which no data can check.
    * **calibration**: within bins of fitted propensity the observed response rate should match the
      mean propensity. Flagged when a bin is more than 3 binomial SEs off.

    When a check fails: add the feature or the cluster term the balance table points at, use the
    random-intercept model when cluster shares are off, report the truncated and untruncated rows
    (overlap), and fall back on the bounds and the sensitivity analysis when nothing repairs it.

    Paper: [MISSING] (weights, positivity); the checks are those of the propensity-score
    literature (standardised differences after weighting, Austin & Stuart 2015).

    Parameters
    ----------
    R : (n,) array of 0/1
        1 where the item has a gradable answer.
    p : (n,) array or PropensityFit
        Fitted propensities of all ``n`` items (``PropensityFit.p``).
    X : (n, k) array or DataFrame, optional
        Features to check balance on (usually those of the model).
    clusters : (n,) labels, optional
        Cluster labels; adds the largest gap in cluster shares to the balance table.
    n_bins : int
        Number of quantile bins of the calibration table (at least 2).
    plot : bool
        Draw the figure (``figure`` is None otherwise).

    Returns
    -------
    PropensityDiagnostics

    Raises
    ------
    ValueError
        ``R`` not 0/1 or all one value, ``p`` of another length or outside (0, 1], misaligned
        ``X`` or ``clusters``, ``n_bins < 2``.

    Examples
    --------
    >>> import evalkit as ek
    >>> d = ek.simulate_clustered(n_clusters=20, cluster_size=30, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    >>> d = ek.simulate_missing(d, mechanism="mar_cluster", response_rate=0.8, strength=1.5, rng=2)
    >>> R = d["correct"].notna()
    >>> fit = ek.propensity_fit(R, d[["x"]], d["cluster"], kind="random")
    >>> diag = ek.propensity_diagnostics(R, fit, d[["x"]], d["cluster"], plot=False)
    >>> diag.problems
    []
    >>> bool(diag.balance["smd_weighted"].abs().max() < 0.05)  # balanced after weighting
    True
    """
    Rv = _as_response(R)
    n = Rv.size
    if Rv.min() == Rv.max():
        raise EvalkitInputError(
            "R", "R has a single value: with every (or no) item answered there is no propensity to check")
    try:
        pv = np.asarray(p.p if isinstance(p, PropensityFit) else p, dtype=float)
    except (TypeError, ValueError) as exc:
        raise EvalkitInputError("p", f"p must be fitted propensities or a PropensityFit ({exc})") from exc
    if pv.shape != (n,):
        raise EvalkitInputError("p", f"p must hold one fitted propensity per item ({n}), got shape {pv.shape}")
    as_probabilities(pv, "p", open_interval=False)
    check_int(n_bins, "n_bins", minimum=2)
    Xa, names = _as_features(X, n, check_constant=False)
    if Xa.shape[0] != n:
        raise EvalkitInputError("X", f"X has {Xa.shape[0]} rows but R has {n}")
    obs = Rv == 1
    problems: list[str] = []

    # overlap
    qs = (0.0, 0.05, 0.5, 0.95, 1.0)
    rows = []
    for label, mask in (("answered", obs), ("missing", ~obs)):
        qv = np.quantile(pv[mask], qs)
        rows.append({"group": label, "n": int(mask.sum()), "min": qv[0], "q05": qv[1], "median": qv[2],
                     "q95": qv[3], "max": qv[4]})
    overlap = pd.DataFrame(rows).set_index("group")
    p_min = float(pv[obs].min())
    if p_min <= 0:
        problems.append("overlap: an answered item has a fitted propensity of 0 (an infinite weight)")
    elif p_min < _OVERLAP_P_MIN:
        problems.append(f"overlap: {int((pv[obs] < _OVERLAP_P_MIN).sum())} answered item(s) have p < "
                        f"{_OVERLAP_P_MIN:g} (weights up to {1 / p_min:.0f}); report truncated and untruncated rows")
    below = float(pv[~obs].min())
    if below < p_min:
        share = float(np.mean(pv[~obs] < p_min))
        if share > 0.05:
            problems.append(f"overlap: {share:.0%} of the missing items have propensities below every answered "
                            "item's; their accuracy is extrapolated")

    # balance
    w = np.where(obs, 1.0 / np.where(pv > 0, pv, np.inf), 0.0)
    brow = []
    for j, name in enumerate(names):
        x = Xa[:, j]
        sd = float(np.std(x, ddof=1))
        target = float(x.mean())
        raw = float(x[obs].mean())
        wtd = float(np.sum(w * x) / np.sum(w))
        sd = sd if sd > 0 else float("nan")
        brow.append({"feature": name, "mean_all": target, "mean_answered": raw, "mean_weighted": wtd,
                     "smd_raw": (raw - target) / sd, "smd_weighted": (wtd - target) / sd})
    if clusters is not None:
        codes, _ = as_labels(clusters, n)
        share_all = np.bincount(codes) / n
        share_raw = np.bincount(codes[obs], minlength=share_all.size) / obs.sum()
        share_w = np.bincount(codes, weights=w, minlength=share_all.size) / w.sum()
        sd_c = np.sqrt(share_all * (1 - share_all))
        sd_c = np.where(sd_c > 0, sd_c, np.nan)
        g_raw = np.nanargmax(np.abs(share_raw - share_all) / sd_c)
        g_w = np.nanargmax(np.abs(share_w - share_all) / sd_c)
        brow.append({"feature": "clusters (largest share gap)", "mean_all": float("nan"),
                     "mean_answered": float("nan"), "mean_weighted": float("nan"),
                     "smd_raw": float(np.abs(share_raw - share_all)[g_raw] / sd_c[g_raw]),
                     "smd_weighted": float(np.abs(share_w - share_all)[g_w] / sd_c[g_w])})
    balance = pd.DataFrame(brow, columns=["feature", "mean_all", "mean_answered", "mean_weighted", "smd_raw",
                                          "smd_weighted"]).set_index("feature")
    bad = balance.index[balance["smd_weighted"].abs() > _BALANCE_SMD_MAX].tolist()
    if bad:
        problems.append(f"balance: after weighting {bad} still differ from all items by more than "
                        f"{_BALANCE_SMD_MAX:g} SD; the propensity model misses them "
                        "(add the term, or a cluster effect)")

    # calibration
    calibration = _calibration_bins(pv, Rv, int(n_bins)).rename(columns={"rate": "response_rate"})
    off = calibration.index[calibration["z"].abs() > _CALIB_Z_MAX].tolist()
    if off:
        problems.append(f"calibration: {len(off)} of {len(calibration)} propensity bins are more than "
                        f"{_CALIB_Z_MAX:g} SEs from their observed response rate; the model's form is wrong "
                        "(a missing term, a link that does not fit)")

    fig = _diagnostics_figure(pv, obs, balance, calibration) if plot else None
    return PropensityDiagnostics(overlap, balance, calibration, problems, fig)


def _diagnostics_figure(p: np.ndarray, obs: np.ndarray, balance: pd.DataFrame, calibration: pd.DataFrame) -> object:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 3.8), layout="constrained")
    _draw_diagnostics(fig.subplots(1, 3), p, obs, balance, calibration)
    return fig


def _draw_diagnostics(axes: Sequence[Any], p: np.ndarray, obs: np.ndarray, balance: pd.DataFrame,
                      calibration: pd.DataFrame) -> None:
    """The three panels of :class:`PropensityDiagnostics` (overlap, balance, calibration) on three given Axes."""
    from .plots import plot_color

    a1, a2, a3 = axes
    bins = np.linspace(0, 1, 26)
    a1.hist(p[obs], bins=bins, alpha=0.6, color=plot_color("CR1"), label=f"answered ({int(obs.sum())})", density=True)
    if (~obs).any():
        a1.hist(p[~obs], bins=bins, alpha=0.6, color=plot_color("iid"), label=f"missing ({int((~obs).sum())})",
                density=True)
    a1.axvline(_OVERLAP_P_MIN, color=plot_color("neutral"), ls=":", lw=1)
    a1.set(xlabel="fitted propensity p", ylabel="density", title="overlap")
    a1.legend(frameon=True, fontsize=9)
    y = np.arange(len(balance))
    a2.scatter(balance["smd_raw"].abs(), y, color=plot_color("cc"), label="answered, unweighted", zorder=3)
    a2.scatter(balance["smd_weighted"].abs(), y, color=plot_color("ipw_ri"), marker="s",
               label="answered, weighted 1/p", zorder=3)
    a2.axvline(_BALANCE_SMD_MAX, color=plot_color("neutral"), ls=":", lw=1)
    a2.set_yticks(y, [str(i) for i in balance.index], fontsize=9)
    a2.set(xlabel="|standardised mean difference|", title="balance", ylim=(-0.5, 1.45 * len(balance)))
    a2.legend(frameon=True, fontsize=9, loc="upper right")  # above the rows, hiding no point
    a3.plot([0, 1], [0, 1], color=plot_color("neutral"), ls=":", lw=1)
    if len(calibration):
        a3.errorbar(calibration["p_mean"], calibration["response_rate"], yerr=2 * calibration["se"], fmt="o",
                    color=plot_color("ipw_ri"))
    a3.set(xlabel="mean fitted propensity (bin)", ylabel="observed response rate", title="calibration (±2 SE)",
           xlim=(0, 1.02), ylim=(0, 1.05))
