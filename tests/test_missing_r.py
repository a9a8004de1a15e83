"""Conformance of evalkit.missing with R: ``lme4::glmer`` (random-intercept logistic) and ``clubSandwich`` (CR2).

These tests run only where ``Rscript`` and the R packages ``lme4`` and ``clubSandwich`` are
installed (Debian: ``apt-get install r-cran-lme4 r-cran-clubsandwich``, about two minutes); they skip
with the reason otherwise.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from evalkit.clustered import mean_estimate
from evalkit.missing import propensity_fit
from evalkit.simulate import simulate_clustered, simulate_missing


def _r_available() -> str | None:
    if shutil.which("Rscript") is None:
        return "Rscript not found (install r-base-core, r-cran-lme4, r-cran-clubsandwich to run R conformance)"
    res = subprocess.run(["Rscript", "-e", "suppressMessages({library(lme4); library(clubSandwich)})"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        return "R packages lme4 and/or clubSandwich are not installed (apt-get install r-cran-lme4 r-cran-clubsandwich)"
    return None


_REASON = _r_available()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")


def _rscript(code: str, tmp_path) -> dict[str, float]:
    script = tmp_path / "run.R"
    script.write_text(code)
    res = subprocess.run(["Rscript", str(script)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = {}
    for line in res.stdout.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = float(v)
    return out


def _data(seed: int, n_clusters: int = 40, size: int = 30, icc: float = 0.2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = simulate_clustered(n_clusters=n_clusters, cluster_size=size, mean=0.6, icc=icc, rng=rng, beta_x=1.0)
    d = simulate_missing(d, mechanism="mnar_cluster", response_rate=0.75, strength=1.2, rng=rng)
    d["x2"] = rng.normal(2.0, 3.0, len(d))
    d["R"] = d["correct"].notna().astype(int)
    return d


_GLMER = """
suppressMessages(library(lme4))
d <- read.csv("{csv}")
d$cluster <- factor(d$cluster)
f <- glmer(R ~ x + x2 + (1 | cluster), data = d, family = binomial, nAGQ = {nagq},
           control = glmerControl(optimizer = "bobyqa", optCtrl = list(maxfun = 1e5),
                                  check.conv.singular = "ignore"))
b <- fixef(f)
cat("b0=", sprintf("%.10f", b[1]), "\\n", sep = "")
cat("b1=", sprintf("%.10f", b[2]), "\\n", sep = "")
cat("b2=", sprintf("%.10f", b[3]), "\\n", sep = "")
cat("sigma=", sprintf("%.10f", sqrt(VarCorr(f)$cluster[1])), "\\n", sep = "")
cat("loglik=", sprintf("%.10f", as.numeric(logLik(f))), "\\n", sep = "")
"""


@pytest.mark.parametrize(("seed", "nagq"), [(1, 1), (2, 1), (3, 9)])
def test_random_intercept_matches_glmer(tmp_path, seed: int, nagq: int) -> None:
    """Fixed effects, random-effect SD and log-likelihood agree with lme4 (Laplace; AGHQ with 9 nodes)."""
    d = _data(seed)
    csv = tmp_path / "d.csv"
    d[["R", "x", "x2", "cluster"]].to_csv(csv, index=False)
    r = _rscript(_GLMER.format(csv=csv, nagq=nagq), tmp_path)
    fit = propensity_fit(d["R"], d[["x", "x2"]], d["cluster"], kind="random",
                         method="laplace" if nagq == 1 else "aghq", n_quad=nagq)
    ours = fit.params
    np.testing.assert_allclose([ours["intercept"], ours["x"], ours["x2"]], [r["b0"], r["b1"], r["b2"]],
                               atol=2e-4, rtol=1e-3)
    np.testing.assert_allclose(fit.sigma_u, r["sigma"], atol=2e-4, rtol=1e-3)
    # lme4 optimises to ~1e-6 in the deviance; our optimum must be at least as good
    assert fit.loglik >= r["loglik"] - 1e-4


_CLUB = """
suppressMessages(library(clubSandwich))
d <- read.csv("{csv}")
f <- lm(y ~ 1, data = d, weights = w)
for (t in c("CR1", "CR2")) {{
  v <- vcovCR(f, cluster = d$cluster, type = t)
  cat(t, "=", sprintf("%.12f", sqrt(as.numeric(v[1, 1]))), "\\n", sep = "")
}}
cat("est=", sprintf("%.12f", coef(f)[1]), "\\n", sep = "")
"""


@pytest.mark.parametrize("weighted", [False, True])
def test_cr2_matches_clubsandwich(tmp_path, weighted: bool) -> None:
    """CR1 and CR2 SEs of the (Hájek-weighted) mean agree with clubSandwich::vcovCR on lm(y ~ 1, weights)."""
    d = _data(7, n_clusters=12, size=25, icc=0.15)
    obs = d["correct"].notna().to_numpy()
    rng = np.random.default_rng(11)
    w = rng.uniform(1.0, 4.0, obs.sum()) if weighted else np.ones(obs.sum())
    sub = pd.DataFrame({"y": d["correct"][obs].to_numpy(), "w": w, "cluster": d["cluster"][obs].to_numpy()})
    csv = tmp_path / "c.csv"
    sub.to_csv(csv, index=False)
    r = _rscript(_CLUB.format(csv=csv), tmp_path)
    for kind in ("CR1", "CR2"):
        e = mean_estimate(sub["y"], sub["cluster"], weights=w, se=kind)
        np.testing.assert_allclose(e.estimate, r["est"], rtol=1e-9)
        # Known variant difference for *weighted* CR2: clubSandwich (inverse-variance weights) uses
        # A_g = D_g' B_g^{-1/2} D_g with D_g = diag(w_g)^{-1/2}, while evalkit scales U_g by
        # (1 - W_g/W)^{-1/2} (CR2 of the sqrt(w)-transformed OLS). They coincide for equal weights
        # and differ by a few tenths of a percent otherwise.
        tol = 1e-6 if (kind == "CR1" or not weighted) else 1e-2
        np.testing.assert_allclose(e.se, r[kind], rtol=tol)
