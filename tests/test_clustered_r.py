"""Conformance of evalkit.clustered with R's ``clubSandwich``: weighted CR2 (both working models) and Satterthwaite df.

For ``lm(y ~ 1, weights = w)`` clubSandwich's default working model is the identity
(``inverse_var = FALSE``), evalkit's ``weights_kind="sampling"``; ``inverse_var = TRUE`` is
``weights_kind="inverse_variance"``. The degrees of freedom are those of
``coef_test(fit, vcov, test = "Satterthwaite")``. Every case uses weights that vary within clusters.

These tests run only where ``Rscript`` and the R package ``clubSandwich`` are installed (Debian:
``apt-get install r-cran-clubsandwich``); they skip with the reason otherwise.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from evalkit import EvalkitWarning
from evalkit.clustered import mean_estimate, paired_estimate

pytestmark = pytest.mark.r_packages("clubSandwich")

_CLUB = """
suppressMessages(library(clubSandwich))
d <- read.csv("{csv}")
out <- function(k, v) cat(k, "=", sprintf("%.17g", v), "\\n", sep = "")
fits <- list(w = lm(y ~ 1, data = d, weights = w), u = lm(y ~ 1, data = d))
for (f in names(fits)) {{
  fit <- fits[[f]]
  out(paste0(f, "_est"), coef(fit)[1])
  for (t in c("CR0", "CR1")) out(paste0(f, "_", t), sqrt(vcovCR(fit, cluster = d$cluster, type = t)[1, 1]))
  for (iv in c(FALSE, TRUE)) {{
    if (f == "u" && iv) next
    v <- vcovCR(fit, cluster = d$cluster, type = "CR2", inverse_var = iv)
    k <- paste0(f, "_CR2_", if (iv) "iv" else "default")
    out(paste0(k, "_se"), sqrt(v[1, 1]))
    out(paste0(k, "_df"), coef_test(fit, vcov = v, test = "Satterthwaite")$df_Satt)
  }}
}}
"""


def _design(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Outcomes, cluster labels and weights (varying within clusters) for a named design."""
    rng = np.random.default_rng({"moderate": 1, "dominant": 2, "issue": 3}[name])
    if name == "moderate":
        sizes = rng.integers(2, 40, size=12)
    elif name == "dominant":          # one dominant cluster and several singletons
        sizes = np.array([180, 1, 1, 1, 1, 1, 6, 3, 2, 12])
    else:   # issue 7's case scaled down (its 1,692-item cluster takes clubSandwich minutes): 7 clusters, 1 big
        sizes = np.array([300, 1, 1, 1, 1, 1, 1])
    g = np.repeat(np.arange(sizes.size), sizes)
    u = rng.normal(0, 0.8, sizes.size)[g]
    y = (rng.random(g.size) < 1 / (1 + np.exp(-(0.4 + u)))).astype(float)
    w = rng.uniform(1.0, 6.0, g.size) ** 2          # IPW-like weights, from 1 to 36
    labels = np.array([f"k{j:02d}" for j in g])
    return y, labels, w


@pytest.mark.parametrize("name", ["moderate", "dominant", "issue"])
def test_weighted_and_unweighted_cr2_and_satterthwaite_match_clubsandwich(rscript, tmp_path, name: str) -> None:
    """SEs (CR0, CR1, CR2 with both working models) and Satterthwaite df agree with clubSandwich to 1e-8."""
    y, g, w = _design(name)
    csv = tmp_path / "d.csv"
    pd.DataFrame({"y": y, "w": w, "cluster": g}).to_csv(csv, index=False)
    r = rscript(_CLUB.format(csv=csv))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        for prefix, weights in (("w", w), ("u", None)):
            for kind in ("CR0", "CR1"):
                e = mean_estimate(y, g, weights=weights, se=kind)
                np.testing.assert_allclose(e.estimate, r[f"{prefix}_est"], rtol=1e-12)
                np.testing.assert_allclose(e.se, r[f"{prefix}_{kind}"], rtol=1e-10)
            variants = [("default", "sampling")] + ([("iv", "inverse_variance")] if weights is not None else [])
            for rname, kind in variants:
                e = mean_estimate(y, g, weights=weights, se="CR2", weights_kind=kind)
                np.testing.assert_allclose(e.se, r[f"{prefix}_CR2_{rname}_se"], rtol=1e-8)
                np.testing.assert_allclose(e.df, r[f"{prefix}_CR2_{rname}_df"], rtol=1e-8)
    if name != "moderate":   # M - 1 is far too generous when one cluster dominates
        assert r["w_CR2_default_df"] < 2


_PAIRED = """
suppressMessages(library(clubSandwich))
d <- read.csv("{csv}")
fit <- lm(I(a - b) ~ 1, data = d)
v <- vcovCR(fit, cluster = d$cluster, type = "CR2")
cat("se=", sprintf("%.17g", sqrt(v[1, 1])), "\\n", sep = "")
cat("df=", sprintf("%.17g", coef_test(fit, vcov = v, test = "Satterthwaite")$df_Satt), "\\n", sep = "")
"""


def test_paired_cr2_satterthwaite_matches_clubsandwich(rscript, tmp_path) -> None:
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 60, size=15)
    g = np.repeat(np.arange(sizes.size), sizes)
    u = rng.normal(0, 1, sizes.size)[g]
    a = (rng.random(g.size) < 1 / (1 + np.exp(-(0.5 + u)))).astype(float)
    b = np.where(rng.random(g.size) < 0.25, 1 - a, a)
    csv = tmp_path / "p.csv"
    pd.DataFrame({"a": a, "b": b, "cluster": g}).to_csv(csv, index=False)
    r = rscript(_PAIRED.format(csv=csv))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        e = paired_estimate(a, b, g, se="CR2")
    np.testing.assert_allclose(e.se, r["se"], rtol=1e-8)
    np.testing.assert_allclose(e.df, r["df"], rtol=1e-8)
