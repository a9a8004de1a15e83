"""evalkit: the statistics of LLM evaluation, rebuilt from five papers as tested code and notebooks.

Public names follow one grammar, ``<family>_<action>`` (see the README), and are re-exported here:
notebooks and users import from ``evalkit`` only.
"""

from ._checks import EvalkitWarning
from .clustered import (
    COVERAGE_ESTIMATORS,
    Estimate,
    bootstrap_cluster,
    clusters_effective,
    coverage_study,
    deff_empirical,
    deff_from_icc,
    icc_anova,
    icc_latent,
    interval_t,
    interval_wilson,
    mean_estimate,
    n_effective,
    paired_estimate,
)
from .data import (
    LONG_COLUMNS,
    MISSING_REASONS,
    STATUSES,
    EvalMatrix,
    long_to_matrix,
    long_validate,
    matrix_to_long,
)
from .datasets import (
    DATASETS,
    DatasetChecksumError,
    DatasetNotFoundError,
    DatasetSpec,
    alpaca_pairs,
    dataset_info,
    dataset_items,
    dataset_list,
    dataset_load,
    dataset_matrix,
    dataset_path,
    dataset_search_path,
    oll_factors_load,
    oll_matrix_draw,
)
from .irt import (
    IRTFit,
    IRTRankComparison,
    IRTStandardErrors,
    irt_fit,
    irt_fit_lbfgs,
    irt_flag_uninformative,
    irt_group_easiness,
    irt_information,
    irt_objective,
    irt_rank_compare,
    irt_se,
)
from .logs import LogFormatError, log_read, log_read_inspect, log_read_lm_eval, log_read_table
from .missing import (
    TRUNCATE_DEFAULT,
    MissingDetails,
    PropensityFit,
    Weights,
    ipw_bootstrap,
    ipw_compare,
    ipw_estimate,
    missing_bounds,
    missing_breakdown,
    missing_complete_case,
    missing_features,
    missing_report,
    propensity_fit,
    sensitivity_delta,
    sensitivity_plot,
    sensitivity_tipping_point,
    weights_compute,
)
from .missing_study import STUDY_COLORS, missing_explore, missing_study
from .montecarlo import mc_coverage_clustered, mc_run, mc_summarise, mc_tolerance
from .plots import PALETTE, plot_coverage, plot_intervals, plot_mc_errors, plot_style
from .report import Report, report_build, report_write
from .reproduce import PAPERS, ReproTable, repro_report_write
from .simulate import (
    MECHANISMS,
    SIZE_DESIGNS,
    simulate_2pl,
    simulate_calibrate,
    simulate_cluster_sizes,
    simulate_clustered,
    simulate_icc_observed,
    simulate_missing,
)
from .types import as_rng
from .widgets import widget_choice, widget_live, widget_slider

__all__ = [
    "EvalkitWarning",
    "as_rng",
    # data model
    "STATUSES",
    "MISSING_REASONS",
    "LONG_COLUMNS",
    "EvalMatrix",
    "long_validate",
    "long_to_matrix",
    "matrix_to_long",
    # datasets
    "DATASETS",
    "DatasetSpec",
    "DatasetNotFoundError",
    "DatasetChecksumError",
    "dataset_search_path",
    "dataset_list",
    "dataset_info",
    "dataset_path",
    "dataset_load",
    "dataset_matrix",
    "dataset_items",
    "alpaca_pairs",
    "oll_factors_load",
    "oll_matrix_draw",
    # clustered inference
    "Estimate",
    "interval_t",
    "mean_estimate",
    "paired_estimate",
    "bootstrap_cluster",
    "icc_anova",
    "icc_latent",
    "deff_from_icc",
    "deff_empirical",
    "n_effective",
    "clusters_effective",
    "interval_wilson",
    "coverage_study",
    "COVERAGE_ESTIMATORS",
    # simulation
    "MECHANISMS",
    "SIZE_DESIGNS",
    "simulate_calibrate",
    "simulate_icc_observed",
    "simulate_cluster_sizes",
    "simulate_clustered",
    "simulate_missing",
    "simulate_2pl",
    # Monte Carlo
    "mc_run",
    "mc_summarise",
    "mc_tolerance",
    "mc_coverage_clustered",
    # missing responses
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
    "missing_explore",
    "STUDY_COLORS",
    "TRUNCATE_DEFAULT",
    "sensitivity_delta",
    "sensitivity_tipping_point",
    "sensitivity_plot",
    # item response theory
    "IRTFit",
    "IRTStandardErrors",
    "IRTRankComparison",
    "irt_fit",
    "irt_fit_lbfgs",
    "irt_objective",
    "irt_se",
    "irt_information",
    "irt_flag_uninformative",
    "irt_rank_compare",
    "irt_group_easiness",
    # reproduction report
    "PAPERS",
    "ReproTable",
    "repro_report_write",
    # plots and widgets
    "PALETTE",
    "plot_style",
    "plot_intervals",
    "plot_coverage",
    "plot_mc_errors",
    "widget_live",
    "widget_slider",
    "widget_choice",
    # logs.py: importers of eval logs
    "LogFormatError",
    "log_read",
    "log_read_inspect",
    "log_read_lm_eval",
    "log_read_table",
    # report.py: `evalkit report`
    "Report",
    "report_build",
    "report_write",
]

__version__ = "0.1.0"
