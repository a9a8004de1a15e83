"""The FAQ authors' released logs: carry their numbers into data/faq_authors/, recompute their multiplier.

The authors of [FAQ] (Wu, Nair, Candes, arXiv 2601.20251) released their result logs with their
code (github.com/skbwu/efficiently-evaluating-llms @ cb93100, Apache-2.0). Two subcommands:

``build MIRROR``
    Read the logs from a git clone of that repository (``MIRROR`` is its git directory) and write
    the numeric tables below into ``data/faq_authors/`` (numbers only: widths, coverages, ESS,
    squared errors; the logs hold no item text):

    - ``faq_summary.csv``: ``logs/final/cleaned/faq_summary.csv`` unchanged (per data scenario and
      budget: ESS multiplier, coverage and mean width, each with its standard error over 100 seeds);
    - ``uniform_summary.csv``: ``logs/final/cleaned/uniform_summary.csv`` unchanged;
    - ``best_baseline_summary.csv``: ``logs/final/cleaned/best_baseline_summary.csv`` unchanged (their
      strongest baseline per scenario and budget, chosen post hoc on the test models);
    - ``best_ablation_summary.csv``: ``logs/final/cleaned/best_ablation_summary.csv`` unchanged (their
      sequential active inference ablation, its best setting chosen post hoc on the test models);
    - ``mmlu_pro_full_per_seed.csv``: MMLU-Pro with a fully observed history, per budget and seed,
      FAQ's mean width and coverage (``logs/final/faq_final_logs.csv``) beside their uniform
      baseline's mean width and coverage (``logs/final/cleaned/uniform_df.csv``, ``policy=unif``,
      ``f=zero``);
    - ``mmlu_pro_with_replacement_per_seed.csv``: their with-replacement FAQ rerun
      (``logs/final/without_replacement_ablation/faq_without-replacement=False.csv``): per budget
      and seed, mean width, coverage and mean squared error;
    - ``mmlu_pro_without_replacement_per_seed.csv``: the same rerun without replacement, drawn items'
      probabilities set to zero and the rest renormalised
      (``logs/final/without_replacement_ablation/faq_without-replacement=True.csv``, Appendix B of
      the paper), with the same columns.

``multiplier [--data DIR]``
    Recompute the ESS multiplier from the per-seed table with the authors' formula
    (``cleaning_results.py``: per seed, ``(mean uniform width / mean FAQ width)^2``, then the mean
    over seeds) and print it beside the summary the authors released and the figures the review of
    the paper quotes (papers/001: 4.68 / 5.01 / 4.52 at 5 / 12.5 / 25%).
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "faq_authors"
REPOSITORY = "skbwu/efficiently-evaluating-llms"
COMMIT = "cb93100"
REVIEW = {0.05: 4.68, 0.125: 5.01, 0.25: 4.52}
"""The ESS multipliers the review of the paper (papers/001) gives for MMLU-Pro, full history."""
SCENARIO = ["dataset", "n_full_obs", "mcar_obs_prob", "prop_budget"]


def _git_csv(mirror: Path, path: str) -> pd.DataFrame:
    text = subprocess.run(["git", f"--git-dir={mirror}", "show", f"{COMMIT}:{path}"], check=True,
                          capture_output=True, text=True).stdout
    return pd.read_csv(io.StringIO(text))


def _full_history(df: pd.DataFrame) -> pd.DataFrame:
    """MMLU-Pro rows with a fully observed history (``n_full_obs`` empty, ``mcar_obs_prob`` 1)."""
    return df[(df["dataset"] == "mmlu-pro") & df["n_full_obs"].isna() & (df["mcar_obs_prob"] == 1.0)]


def build(mirror: Path) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for name in ("faq_summary.csv", "uniform_summary.csv", "best_baseline_summary.csv", "best_ablation_summary.csv"):
        _git_csv(mirror, f"logs/final/cleaned/{name}").to_csv(DATA / name, index=False)
    faq = _full_history(_git_csv(mirror, "logs/final/faq_final_logs.csv"))
    uni = _git_csv(mirror, "logs/final/cleaned/uniform_df.csv")
    uni = _full_history(uni[(uni["policy"] == "unif") & (uni["f"] == "zero")])
    keys = ["prop_budget", "seed"]
    per_seed = faq[keys + ["mean_width", "coverage"]].merge(
        uni[keys + ["N_B", "mean_width", "coverage"]], on=keys, suffixes=("_faq", "_uniform"), validate="1:1")
    per_seed = per_seed.rename(columns={"N_B": "n_b"}).sort_values(keys).reset_index(drop=True)
    per_seed.to_csv(DATA / "mmlu_pro_full_per_seed.csv", index=False)
    for flag, name in (("False", "with"), ("True", "without")):
        rep = _git_csv(mirror, f"logs/final/without_replacement_ablation/faq_without-replacement={flag}.csv")
        rep[["prop_budget", "seed", "mean_width", "coverage", "sq_err"]].to_csv(
            DATA / f"mmlu_pro_{name}_replacement_per_seed.csv", index=False)
    print(f"wrote {sorted(p.name for p in DATA.glob('*.csv'))} into {DATA}")


def multiplier_table(per_seed: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Per budget: the multiplier recomputed with the authors' formula, their released one, the review's."""
    ratio = (per_seed["mean_width_uniform"] / per_seed["mean_width_faq"]) ** 2
    g = per_seed.assign(ess=ratio).groupby("prop_budget")
    out = pd.DataFrame({
        "ess_recomputed": g["ess"].mean(),
        "ess_recomputed_se": g["ess"].std() / g["ess"].count() ** 0.5,
        "coverage_faq": g["coverage_faq"].mean(),
        "coverage_uniform": g["coverage_uniform"].mean(),
        "width_faq": g["mean_width_faq"].mean(),
        "width_uniform": g["mean_width_uniform"].mean(),
        "n_seeds": g["ess"].count(),
    })
    released = _full_history(summary).set_index("prop_budget")
    out["ess_released"] = released["ess_multiplier"].reindex(out.index)
    out["ess_review_papers_001"] = [REVIEW.get(round(float(b), 4), float("nan")) for b in out.index]
    return out.reset_index()


def review_lookup(summary: pd.DataFrame) -> pd.DataFrame:
    """For each figure of the review, the three released MMLU-Pro cells whose multiplier is nearest."""
    mm = summary[summary["dataset"] == "mmlu-pro"]
    rows = []
    for budget, value in REVIEW.items():
        near = mm.assign(distance=(mm["ess_multiplier"] - value).abs()).nsmallest(3, "distance")
        for _, r in near.iterrows():
            rows.append({"review_budget": budget, "review_value": value, "cell_n_full_obs": r["n_full_obs"],
                         "cell_mcar_obs_prob": r["mcar_obs_prob"], "cell_budget": r["prop_budget"],
                         "cell_ess": round(float(r["ess_multiplier"]), 3)})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("mirror", type=Path, help="git directory of a clone of " + REPOSITORY)
    m = sub.add_parser("multiplier")
    m.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    if args.cmd == "build":
        build(args.mirror)
        return
    table = multiplier_table(pd.read_csv(args.data / "mmlu_pro_full_per_seed.csv"),
                             pd.read_csv(args.data / "faq_summary.csv"))
    with pd.option_context("display.width", 200):
        print(table.round(4).to_string(index=False))
        print("\nWhere the review's figures sit among the released MMLU-Pro cells (nearest three):")
        print(review_lookup(pd.read_csv(args.data / "faq_summary.csv")).to_string(index=False))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
