"""Conformance of evalkit.missing with R: ``lme4::glmer`` (random-intercept logistic), ``clubSandwich`` (CR2).

These tests run only where ``Rscript`` and the R packages ``lme4`` and ``clubSandwich`` (and, for
the doubly robust variance, ``survey``) are installed (Debian: ``apt-get install r-cran-lme4
r-cran-clubsandwich r-cran-survey``, about two minutes); they skip with the reason otherwise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalkit.clustered import mean_estimate
from evalkit.missing import ipw_compare, propensity_fit
from evalkit.simulate import simulate_clustered, simulate_missing

pytestmark = pytest.mark.r_packages("lme4", "clubSandwich")


def _data(seed: int, n_clusters: int = 40, size: int = 30, icc: float = 0.2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = simulate_clustered(n_clusters=n_clusters, cluster_size=size, mean=0.6, icc=icc, rng=rng, beta_x=1.0)
    d = simulate_missing(d, mechanism="mar_cluster", response_rate=0.75, strength=1.2, rng=rng)
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
def test_random_intercept_matches_glmer(rscript, tmp_path, seed: int, nagq: int) -> None:
    """Fixed effects, random-effect SD and log-likelihood agree with lme4 (Laplace; AGHQ with 9 nodes)."""
    d = _data(seed)
    csv = tmp_path / "d.csv"
    d[["R", "x", "x2", "cluster"]].to_csv(csv, index=False)
    r = rscript(_GLMER.format(csv=csv, nagq=nagq))
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
def test_cr2_matches_clubsandwich(rscript, tmp_path, weighted: bool) -> None:
    """CR1 and CR2 SEs of the (Hájek-weighted) mean agree with clubSandwich::vcovCR on lm(y ~ 1, weights)."""
    d = _data(7, n_clusters=12, size=25, icc=0.15)
    obs = d["correct"].notna().to_numpy()
    rng = np.random.default_rng(11)
    w = rng.uniform(1.0, 4.0, obs.sum()) if weighted else np.ones(obs.sum())
    sub = pd.DataFrame({"y": d["correct"][obs].to_numpy(), "w": w, "cluster": d["cluster"][obs].to_numpy()})
    csv = tmp_path / "c.csv"
    sub.to_csv(csv, index=False)
    r = rscript(_CLUB.format(csv=csv))
    for kind in ("CR1", "CR2"):
        e = mean_estimate(sub["y"], sub["cluster"], weights=w, se=kind)
        np.testing.assert_allclose(e.estimate, r["est"], rtol=1e-9)
        # weighted CR2 is clubSandwich's default working model for weighted lm (weights_kind="sampling")
        np.testing.assert_allclose(e.se, r[kind], rtol=1e-8)


_GLMER_NS = """
suppressMessages(library(lme4))
d <- read.csv("{csv}")
d$cluster <- factor(d$cluster)
f <- suppressWarnings(glmer(R ~ x1 + x2 + (1 | cluster), data = d, family = binomial, nAGQ = {nagq},
           control = glmerControl(optimizer = "bobyqa", optCtrl = list(maxfun = 1e5),
                                  check.conv.singular = "ignore")))
b <- fixef(f)
cat("b0=", sprintf("%.10f", b[1]), "\\n", sep = "")
cat("b1=", sprintf("%.10f", b[2]), "\\n", sep = "")
cat("b2=", sprintf("%.10f", b[3]), "\\n", sep = "")
cat("sigma=", sprintf("%.10f", sqrt(VarCorr(f)$cluster[1])), "\\n", sep = "")
cat("loglik=", sprintf("%.10f", as.numeric(logLik(f))), "\\n", sep = "")
"""


def _few_nonresponses(seed: int, *, sd_u: float | None = None) -> pd.DataFrame:
    """1,700 items in a few unequal clusters with a handful of non-responses driven by x1 and the cluster."""
    rng = np.random.default_rng(seed)
    if sd_u is None:  # the harder family: skewed cluster sizes, cluster SD up to 4
        M = int(rng.integers(4, 14))
        p = rng.dirichlet(np.full(M, rng.choice([0.2, 0.5, 1.0])))
        cl = pd.factorize(rng.choice(M, size=1700, p=p))[0]
        x1, x2 = rng.normal(size=cl.size), rng.normal(size=cl.size)
        u = rng.normal(0, rng.choice([1.0, 2.5, 4.0]), cl.max() + 1)
        eta = rng.uniform(5, 9) - rng.uniform(0.5, 2.5) * x1 + u[cl]
    else:
        M = int(rng.integers(6, 16))
        cl = pd.factorize(rng.choice(M, size=1700, p=rng.dirichlet(np.ones(M))))[0]
        x1, x2 = rng.normal(size=cl.size), rng.normal(size=cl.size)
        eta = 6.5 - 1.2 * x1 + rng.normal(0, sd_u, M)[cl]
    R = (rng.random(cl.size) > 1 / (1 + np.exp(eta))).astype(int)
    return pd.DataFrame({"R": R, "x1": x1, "x2": x2, "cluster": cl})


@pytest.mark.parametrize("nagq", [5, 10])
def test_aghq_few_nonresponses_matches_glmer(rscript, tmp_path, nagq: int) -> None:
    """5 non-responses in 1,700 items (near-separation, cluster SD about 2): AGHQ agrees with glmer(nAGQ)."""
    d = _few_nonresponses(900, sd_u=1.5)
    assert (d["R"] == 0).sum() == 5
    csv = tmp_path / "d.csv"
    d.to_csv(csv, index=False)
    r = rscript(_GLMER_NS.format(csv=csv, nagq=nagq))
    fit = propensity_fit(d["R"], d[["x1", "x2"]], d["cluster"], kind="random", method="aghq", n_quad=nagq)
    assert fit.converged and not fit.separated
    # lme4 places the AGHQ nodes at PIRLS modes found to a looser tolerance, which moves its
    # quadrature value by up to ~3e-5 (as in test_random_intercept_matches_glmer)
    assert fit.loglik >= r["loglik"] - 1e-4
    np.testing.assert_allclose(fit.loglik, r["loglik"], atol=1e-4)
    np.testing.assert_allclose(fit.sigma_u, r["sigma"], rtol=2e-3)
    np.testing.assert_allclose([fit.intercept, *fit.coef], [r["b0"], r["b1"], r["b2"]], rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("nagq", [5, 10])
def test_aghq_large_cluster_sd_at_least_as_good_as_glmer(rscript, tmp_path, nagq: int) -> None:
    """8 non-responses in 1,700 items, cluster SD about 10: the AGHQ likelihood has several local maxima.
    evalkit must reach at least glmer's maximum (here it finds a higher one) and say it converged."""
    d = _few_nonresponses(3131)
    assert (d["R"] == 0).sum() == 8
    csv = tmp_path / "d.csv"
    d.to_csv(csv, index=False)
    r = rscript(_GLMER_NS.format(csv=csv, nagq=nagq))
    fit = propensity_fit(d["R"], d[["x1", "x2"]], d["cluster"], kind="random", method="aghq", n_quad=nagq)
    assert fit.converged
    assert fit.loglik >= r["loglik"] - 1e-4


def test_aghq_separated_case_at_least_as_good_as_glmer(rscript, tmp_path) -> None:
    """4 non-responses in 1,700 items separated by x1: the old AGHQ(10) stopped 0.067 short of glmer and said
    converged. Now it is at least as good as glmer(nAGQ = 10) and says 'separation'."""
    from test_missing import near_separated

    d = near_separated()
    csv = tmp_path / "d.csv"
    d.to_csv(csv, index=False)
    r = rscript(_GLMER_NS.format(csv=csv, nagq=10))
    with pytest.warns(Warning, match="separation"):
        fit = propensity_fit(d["R"], d[["x1", "x2"]], d["cluster"], kind="random", method="aghq", n_quad=10)
    assert fit.loglik >= r["loglik"] - 1e-4
    assert fit.separated


_COMPARE = """
suppressMessages(library(clubSandwich))
d <- read.csv("{csv}")
out <- function(k, v) cat(k, "=", sprintf("%.17g", v), "\\n", sep = "")
# both models' observed outcomes stacked; the coefficient of is_a is theta_a - theta_b
fit <- lm(y ~ is_a, data = d, weights = w)
out("est", coef(fit)[2])
for (t in c("CR0", "CR1")) out(t, sqrt(vcovCR(fit, cluster = d$cluster, type = t)[2, 2]))
v <- vcovCR(fit, cluster = d$cluster, type = "CR2")
out("CR2", sqrt(v[2, 2]))
out("df", coef_test(fit, vcov = v, test = "Satterthwaite")$df_Satt[2])
"""


def _compare_design(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two models on 14 unequal clusters (one large), each with its own missingness and propensities;
    model B has no respondent in cluster 3."""
    rng = np.random.default_rng(seed)
    sizes = np.array([120, 3, 40, 7, 1, 25, 60, 2, 15, 9, 4, 33, 1, 18])
    g = np.repeat(np.arange(sizes.size), sizes)
    u = rng.normal(0, 0.9, sizes.size)[g]
    ya = (rng.random(g.size) < 1 / (1 + np.exp(-(0.6 + u)))).astype(float)
    yb = np.where(rng.random(g.size) < 0.3, 1 - ya, ya)
    p_a = rng.uniform(0.2, 0.95, g.size)
    p_b = rng.uniform(0.3, 0.9, g.size)
    ya[rng.random(g.size) > p_a] = np.nan
    yb[rng.random(g.size) > p_b] = np.nan
    yb[g == 3] = np.nan
    return ya, yb, p_a, p_b, g, sizes


def test_ipw_compare_cr2_satterthwaite_matches_clubsandwich(rscript, tmp_path) -> None:
    """ipw_compare's CR0/CR1/CR2 SEs and CR2 Satterthwaite df equal clubSandwich's for the stacked weighted
    regression ``lm(y ~ is_a, weights = 1/p)`` clustered by the items' clusters (unequal clusters, different
    respondents and weights per model, a cluster where one model has no respondent)."""
    ya, yb, p_a, p_b, g, _ = _compare_design(5)
    labels = np.array([f"c{j:02d}" for j in g])
    rows = []
    for is_a, y, p in ((1, ya, p_a), (0, yb, p_b)):
        obs = ~np.isnan(y)
        rows.append(pd.DataFrame({"y": y[obs], "is_a": is_a, "w": 1 / p[obs], "cluster": labels[obs]}))
    csv = tmp_path / "cmp.csv"
    pd.concat(rows).to_csv(csv, index=False)
    r = rscript(_COMPARE.format(csv=csv))
    for kind in ("CR0", "CR1", "CR2"):
        e = ipw_compare(ya, yb, labels, p_a=p_a, p_b=p_b, se=kind)
        np.testing.assert_allclose(e.estimate, r["est"], rtol=1e-12)
        np.testing.assert_allclose(e.se, r[kind], rtol=1e-10)
        if kind == "CR2":
            np.testing.assert_allclose(e.df, r["df"], rtol=1e-10)
        else:
            assert e.df == len(set(labels)) - 1
    # the design is unbalanced enough that Satterthwaite's df is well below M - 1
    assert r["df"] < 0.8 * (len(set(labels)) - 1)


# --------------------------------------------------------------------------------------------
# doubly robust (evalkit.missing_dr): the cluster variance of the influence values against survey
# --------------------------------------------------------------------------------------------

_SURVEY = """
suppressMessages(library(survey))
d <- read.csv("{csv}")
des <- svydesign(ids = ~cluster, data = d, weights = ~w)
m <- svymean(~phi, des)
cat("est=", sprintf("%.15g", coef(m)[1]), "\\n", sep = "")
cat("se=", sprintf("%.15g", SE(m)[1]), "\\n", sep = "")
dd <- svymean(~dphi, des)
cat("se_diff=", sprintf("%.15g", SE(dd)[1]), "\\n", sep = "")
"""


@pytest.mark.r_packages("survey")
@pytest.mark.parametrize("sizes", ["balanced", "skewed"])
def test_dr_cluster_variance_matches_survey(rscript, tmp_path, sizes: str) -> None:
    """CR1 of dr_estimate (the influence values summed by cluster) is survey's linearisation SE of mean(phi).

    ``svydesign(ids = ~cluster)`` with equal weights and ``svymean`` give the with-replacement
    cluster (ultimate cluster) variance ``M / (M - 1) sum_g (z_g - mean z)^2`` of the cluster totals
    ``z_g = sum_{i in g} (phi_i - theta) / n``: evalkit's CR1 of the DR estimate, and of a paired
    difference.
    """
    from evalkit import dr_compare, dr_estimate

    rng = np.random.default_rng(11)
    d = simulate_clustered(n_clusters=30, cluster_size=20, mean=0.6, icc=0.2, rng=rng, beta_x=1.0, sizes=sizes)
    a = simulate_missing(d, mechanism="mar", response_rate=0.7, rng=rng, latent=1.0)
    b = simulate_missing(d, mechanism="mar", response_rate=0.85, rng=rng)
    X = d[["x", "u"]]
    e = dr_estimate(a["correct"], d["cluster"], features=X, folds=5, seed=1)
    c = dr_compare(a["correct"], b["correct"], d["cluster"], features=X, folds=5, seed=1)
    csv = tmp_path / "dr.csv"
    pd.DataFrame({"cluster": d["cluster"], "phi": e.pseudo, "dphi": c.pseudo, "w": 1.0}).to_csv(csv, index=False)
    r = rscript(_SURVEY.format(csv=csv))
    assert e.estimate == pytest.approx(r["est"], abs=1e-12)
    assert e.ses["CR1"] == pytest.approx(r["se"], rel=1e-10)
    assert c.ses["CR1"] == pytest.approx(r["se_diff"], rel=1e-10)
