"""The data registry: real evaluation results, carried in the repository and verified by checksum.

Every dataset evalkit knows is an entry of :data:`DATASETS` (name -> :class:`DatasetSpec`: files
with their sha256, licence, upstream source). The repository's ``data/`` folder holds the
**numeric** tables of every dataset (outcomes, statuses, ids, labels, option probabilities,
factor models, and lengths computed from the item texts); the item texts themselves are never
part of evalkit. The installed package carries the same tables (``evalkit/_data``, copied from
``data/`` when the wheel is built). evalkit **never downloads** anything. A file is looked up as
``<root>/<folder>/<file>`` on the search path

1. every folder in the environment variable ``EVALKIT_DATA`` (several folders separated by
   ``os.pathsep``, i.e. ``:`` on Linux/macOS, ``;`` on Windows), in order;
2. the repository's ``data/`` folder, when evalkit runs from a clone (an editable install or
   the source tree): nothing to set up;
3. the data installed with the package (found with :mod:`importlib.resources`): nothing to set
   up after ``pip install evalkit``;
4. the user cache folder ``$XDG_CACHE_HOME/evalkit`` (``~/.cache/evalkit`` when
   ``XDG_CACHE_HOME`` is unset).

The first intact copy wins. Every use reads the file and checks the sha256 of the very bytes it
parses, so a file changed on disk is caught at once, also inside one process. A copy that is
absent, unreadable, or has another checksum is skipped (with an :class:`EvalkitWarning` for the
last two) and the search goes on to the next root; when no root has an intact copy,
:class:`DatasetNotFoundError` or :class:`DatasetChecksumError` names the dataset, every place
searched with what was found there, the expected checksum, the upstream source and what to do.

Loaders return the evalkit long table (``model, item, cluster, correct, status`` plus extras; see
:mod:`evalkit.data`) or, through :func:`dataset_matrix`, its matrix view.

Adding files that a project script computes (for example text embeddings): write them under
``data/<folder>/`` from a script in ``scripts/`` and register them in ``_SPECS`` (a new
:class:`DatasetSpec` with ``source="evalkit: scripts/<script>.py"``, or new entries in an existing
spec's ``files``). ``scripts/build_data.py`` builds the numeric tables of the six upstream
datasets; read item texts, where a copy of the upstream data is available, with
:func:`dataset_texts`.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import io
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from ._checks import warn
from .data import EvalMatrix, long_to_matrix, long_validate
from .errors import EvalkitInputError, EvalkitInputNotFoundError, EvalkitInputTypeError
from .types import as_rng

__all__ = [
    "DATASETS",
    "DatasetSpec",
    "DatasetError",
    "DatasetNotFoundError",
    "DatasetChecksumError",
    "dataset_search_path",
    "dataset_list",
    "dataset_info",
    "dataset_path",
    "dataset_load",
    "dataset_matrix",
    "dataset_items",
    "dataset_texts",
    "alpaca_pairs",
    "oll_factors_load",
    "oll_matrix_draw",
    "versions",
    "show_versions",
]

ENV_VAR = "EVALKIT_DATA"
"""Environment variable holding the data roots (separated by ``os.pathsep``)."""

def _source_tree() -> Path | None:
    """The repository evalkit runs from (a clone or an editable install), or None when installed."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "evalkit" / "datasets.py").is_file() else None


def _package_folder(name: str) -> Path | None:
    """A folder of package data that the wheel carries (``evalkit/<name>``), or None if not on disk."""
    from importlib.resources import files

    where = files(__name__.rpartition(".")[0]).joinpath(name)
    return where if isinstance(where, Path) else None


_SOURCE_TREE = _source_tree()

REPO_DATA: Path | None = None if _SOURCE_TREE is None else _SOURCE_TREE / "data"
"""The repository's ``data/`` folder when evalkit runs from a clone, else None (second on the search path)."""

PACKAGE_DATA: Path | None = _package_folder("_data")
"""The data installed with the package, ``evalkit/_data`` (third on the search path)."""


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetSpec:
    """One registered dataset: where its files live, how to check them and where they come from.

    Attributes
    ----------
    name : str
        Registry key (also the folder name under a data root).
    folder : str
        Folder under a data root that holds the files.
    files : Mapping[str, str]
        File name -> expected sha256 (hex) of the files evalkit reads (those in ``data/``).
    licence : str
        Licence of the upstream data (share-alike data keep it: see ``data/README.md``).
    source : str
        Upstream repository (``owner/name`` on GitHub), or ``"evalkit: scripts/<script>.py"``
        for files this project computes.
    commit : str
        Upstream commit(s) the files were converted from.
    description : str
        One line: what the data are.
    shape : str
        Size of the evaluation (models x items).
    clusters : str
        The natural clusters of items.
    missingness : str
        What is missing and why.
    notes : str
        Caveats and citation notes (also see the folder's ``SOURCE.md``).
    load_options : tuple of str
        Keyword options :func:`dataset_load` accepts for this dataset.
    upstream : Mapping[str, str]
        Upstream file -> sha256 of the converted copies that ``scripts/build_data.py`` reads
        (and :func:`dataset_texts` for the texts). Not in the repository; never read by the
        loaders.
    texts : str
        The upstream file (a key of ``upstream``) that holds the item texts, or ``""``.
    """

    name: str
    folder: str
    files: Mapping[str, str]
    licence: str
    source: str
    commit: str
    description: str
    shape: str = ""
    clusters: str = ""
    missingness: str = ""
    notes: str = ""
    load_options: tuple[str, ...] = field(default=(), repr=False)
    upstream: Mapping[str, str] = field(default_factory=dict, repr=False)
    texts: str = field(default="", repr=False)

    @property
    def source_url(self) -> str:
        """The upstream repository as a URL (or the project script, for files evalkit computes)."""
        return self.source if self.source.startswith("evalkit:") else f"https://github.com/{self.source}"

    def provenance(self) -> str:
        """One line of provenance and licence, for notebooks and error messages."""
        return f"{self.source_url} @ {self.commit} (licence: {self.licence}; see data/{self.folder}/SOURCE.md)"


_SPECS: tuple[DatasetSpec, ...] = (
    DatasetSpec(
        name="mmlu_pro_official",
        folder="mmlu_pro_official",
        files={
            "responses_long.csv.xz": "f10517606491cff4d4a6242faf61de38ff198cfc54c38d211b168b0b7e8c18ee",
            "items.csv.xz": "0f6c57aad5d7737aad93cc50ae2ea3acf47a7e6351d21b8bc615862051c80ae0",
            "matrix_correct_nan_missing.npz": "a551bb8ab6742d11c1c312cb274e203a16255bd3cd05f2dd1c7ee1cad5726886",
            "model_sources.csv": "42b8f4efb1d6eafe4a3730dab230d966dbfb4072e72b5718a964f3939e375db9",
        },
        licence="Apache-2.0",
        source="TIGER-AI-Lab/MMLU-Pro",
        commit="f418b116db00b065c2aea046518d8fcf74d39872 (29 model zips); "
        "ff991b5b7f14a383fd41da3987447ab6c08bf138 (deepseek, gpt4o per-subject files)",
        description="MMLU-Pro official leaderboard outputs (5-shot CoT), per question",
        shape="31 models x 12,032 questions",
        clusters="14 categories; 91 original sources (src)",
        missingness="35,641 parse failures (0-23% by model); 1,881 missing records (not_run)",
        notes="The official scorer replaces parse failures by a random guess; evalkit keeps them "
        "missing (status parse_failure). Model outputs are subject to the models' own terms.",
        load_options=("cluster", "models"),
        upstream={
            "responses_long.csv.gz": "1a5c0c6a47a195e9db9a3aa7061fd11fb87c23f57c7e2b81336118b09bf3496c",
            "items.csv.gz": "4138849645f031835635d257908bc940f863ff777138db07d30a77fdfae69b24",
        },
        texts="items.csv.gz",
    ),
    DatasetSpec(
        name="chembench",
        folder="chembench",
        files={
            "responses_long.csv.xz": "ee72dee324e1f2e88f4c255f7ffff10e63007a2fbef769d07ff14d261f5bb183",
            "items.csv.xz": "3f7da21932cf25bb996589a7afd9d1861c8ae62bf2b8e73ec69469e1b54d2bd6",
            "mcq_option_probs.csv.xz": "74b231ad45f740671946070bb34a1b94f0cd3b8619397a0884a89d092124accc",
            "matrix_correct.npz": "6a018115e1facad6ca0b2e6afd33a82873486c04b08a596f97cfc009a980076f",
        },
        licence="MIT",
        source="lamalab-org/chembench-paper",
        commit="8fe22914b81978d180e6182ea982eb58e2e0e8dc",
        description="ChemBench per-model, per-question reports",
        shape="35 model runs x 2,788 questions",
        clusters="9 topics; 67 source collections (source_dir); human difficulty on 853 items",
        missingness="964 refusal rows (keyword flag, noisy); 800 parse failures",
        notes="Several runs are variants of one model (-T-one, -react, log_prob*, random_baseline, "
        "paper-qa). ChemBench scores refusals and parse failures; that score is kept in "
        "correct_reported. mcq_option_probs keeps the option letters, not their texts.",
        load_options=("cluster",),
        upstream={
            "responses_long.csv.gz": "09ae3aef4caefd2e3231e3414dac8687b8b71818165bf7bf6a9a7df34cd7f206",
            "items.csv.gz": "c43b7ba7343a1456f7dbe5d4a858d861ecb0e49bb12219acff4dc2c6ecf7640f",
            "mcq_option_probs.csv.gz": "04e226f2cf0919133daa5d8241fd5d81f1a0176f7310f8c3eadcb6f65b7570ee",
        },
        texts="items.csv.gz",
    ),
    DatasetSpec(
        name="livecodebench_gen",
        folder="livecodebench_gen",
        files={
            "responses_long.csv.gz": "e6dcf677b84fdc845af0af9c872c3048418546d395c0c36e97aa51e12f420816",
            "items.csv": "1be52bca2f8d566b85783c59da01a192834be492f13d5f0c52a109f2223675e7",
            "models.csv": "eec65eabc3e368b033a7ce853f1da50e17204ebf463982ecb592ed558202896e",
            "matrix_pass_at_1_pct.npz": "95c1d9a90fdd3f1ca773e2eb704578db25a34cd0e1f124fbf6a2dbf55f48e806",
        },
        licence="CC BY-SA 4.0",
        source="LiveCodeBench/livecodebench.github.io",
        commit="8ed5690cdc26265076a803380e84f5c5848a0ce1",
        description="LiveCodeBench code generation pass@1 per model and problem",
        shape="45 models x 400 problems",
        clusters="difficulty easy/medium/hard (platform-assigned); platform; contest date",
        missingness="none",
        notes="correct = majority of samples passing (pass@1 >= 50%); no problem text. Share-alike: "
        "these files, and tables derived from them, stay under CC BY-SA 4.0.",
        load_options=("cluster",),
    ),
    DatasetSpec(
        name="alpaca_eval",
        folder="alpaca_eval",
        files={
            "judgments_long.csv.xz": "6350e7da6572a2a1391b43c1c244ff22c52a0db6b4a5af0fc4960ab55b9a3d35",
            "items.csv.xz": "87040947b7bc22cd7c044280af57d99746b61a51dc9f53e02e0f70933ae1c0bb",
            "model_output_lengths.csv.xz": "9817e4151a0fcf0f757fa44a6a043ca419033ca078b69f7b4ed2b0b478bb5f9e",
        },
        licence="Apache-2.0",
        source="tatsu-lab/alpaca_eval",
        commit="cd543a149df89434d8a54582c0151c0b945c3d20",
        description="AlpacaEval per-instruction judge preferences vs a fixed reference model",
        shape="103 models x 805 instructions (58 under the AlpacaEval 2 judge)",
        clusters="5 source datasets",
        missingness="64 missing judgments (no_preference -> error); a few absent rows (not_run)",
        notes="preference: 1 = reference preferred, 2 = model preferred, 0 or 1.5 = draw "
        "(continuous for the weighted judge); model_wins = preference > 1.5.",
        load_options=("annotator",),
        upstream={
            "judgments_long.csv.gz": "3b305e4713a317e527a1141e5e0ba8c21b59a7ca43458d5b517b3401d3bbfad8",
            "items.csv.gz": "0717170337433e5647983d0ce335a4d40308abe816e8735db92ff46988e8f9b2",
            "model_output_lengths.csv.gz": "48611ab81267fa87d6f34d2249190a5a79882df52b9dbb39a29f09db6437c604",
        },
        texts="items.csv.gz",
    ),
    DatasetSpec(
        name="uncertainty_emotion",
        folder="uncertainty_emotion",
        files={
            "option_probs_long.csv.xz": "20c4b0661f522e6796e590ca4b88a0dcb8278a3a246fb68834ff637b89bf68ea",
            "items.csv.xz": "cd90d9e81546b58968b1d8ad554ddb522a31bfbc09752916fd737bbbb1257da6",
            "option_labels.json": "a3af0ba1a80690b56aed84edd975598d995f2ff399b88fe043b227a4f873b674",
        },
        licence="MIT (upstream smartyfh/LLM-Uncertainty-Bench; the fork has no LICENSE file)",
        source="colts661/LLM-Uncertainty-Bench",
        commit="cfc8c3f4063430b6a5731afbd457c24f0b0b6823",
        description="Option probabilities of 11 open models on a 6-option emotion MCQA",
        shape="35 model x prompt x icl runs x 10,000 items (10 models under task/icl1)",
        clusters="4 gold emotions (Joy, Sadness, Anger, Fear)",
        missingness="none",
        notes="Options A-F = Sadness, Joy, Anger, Fear, I don't know, None of the above. The "
        "Emotion data (dair-ai/emotion) have their own terms: teaching use; check before "
        "re-publishing. The tweets are not in the repository, only their lengths.",
        load_options=("prompt", "icl"),
        upstream={
            "option_probs_long.csv.gz": "b34040e81fcbd6154d4111f497e92de6172488cdd46281bba527c95b6dbac4b0",
            "items.csv.gz": "12bd85a08b8bb1f3910d35b33e6673f8257d07c28189599b4142d80ffcd3f9af",
        },
        texts="items.csv.gz",
    ),
    DatasetSpec(
        name="oll_v2_factor_model",
        folder="oll_v2_factor_model",
        files={
            "mmlu_pro_factors_nfobs=None_p=1.0.npz": "16d28418bbdfa8436d601ac16c6a4c049a2d192e5f78de250622e59be4baceb1",
            "mmlu_pro_items.csv": "5f42b6999a2b542e4f5829f7059974fb64c4e500f409f38d901515ead3ed2cee",
            "bbh_gpqa_ifeval_math_musr_factors_nfobs=None_p=1.0.npz": (
                "8ee54f956a5f1d0c87d423c3f50192712e8a4cee9da3b86a6e50db86591cc64b"
            ),
            "bbh_gpqa_ifeval_math_musr_items.csv": "72473a69c1f82223ea574abb10d3fb7ec24566eb865f33bddbd078e130bcb6fb",
        },
        licence="Apache-2.0",
        source="skbwu/efficiently-evaluating-llms",
        commit="cb931006fcebe82c34445a2a0c6d7831314b77c7",
        description="Fitted logistic factor models of the Open LLM Leaderboard v2 (NOT responses)",
        shape="U 2,212 x 64, V 12,032 x 64 (MMLU-Pro); U 2,211 x 64, V 9,574 x 64 (BBH+GPQA+IFEval+MATH+MuSR)",
        clusters="38 subtasks (second suite); none for MMLU-Pro",
        missingness="none (parameters); draw matrices with oll_matrix_draw",
        notes="Draws Y ~ Bernoulli(sigmoid(U V')) are semi-synthetic: a fitted model of the real "
        "leaderboard, not its responses. Model names are not included.",
    ),
)

# ECC's local text embeddings: numbers computed by this project from the item texts of
# three datasets; the files live in the repository's data/embeddings/ (see its README).
_SPECS += (
    DatasetSpec(
        name="embeddings",
        folder="embeddings",
        files={
            "mmlu_pro_official.npz": "9ebc67eaa107c636932b8ced05a288390acdcd20fa0a9a9073cba9bdf5e4fe3e",
            "alpaca_eval.npz": "b73f1fc533b508f939bc5e19d7bb6a1eea1c1167b35d9f3f3047c4f4730bcfec",
            "chembench.npz": "d74588f3617199d97c7b532fdf056d4b3bdf0ef1004f7400e36b2534a9eea51d",
        },
        licence="derived by evalkit from Apache-2.0 (MMLU-Pro, AlpacaEval) and MIT (ChemBench) item texts",
        source="evalkit: scripts/build_embeddings.py",
        commit="this repository",
        description="TF-IDF + truncated SVD unit embeddings (64-d, float16) of item texts, for ECC",
        shape="12,032 (MMLU-Pro) + 805 (AlpacaEval) + 2,788 (ChemBench) items x 64",
        notes="No text is stored: item ids, embeddings and singular values only. Regenerate with "
        "scripts/build_embeddings.py (tests/test_ecc.py compares).",
    ),
)

# The FAQ authors' released result logs (numbers only), for the three-column reproduction rows.
_SPECS += (
    DatasetSpec(
        name="faq_authors",
        folder="faq_authors",
        files={
            "faq_summary.csv": "fe405a26da6784458cddbecccd9e1f1fad4545ff0f636e5cdbe32569acd64398",
            "uniform_summary.csv": "9b7d8ce4fe607793ce46f20e7c4de606ac597a3ae6cb543f0174b36691d35f81",
            "mmlu_pro_full_per_seed.csv": "7f8bfc816916603a4bd02ce5d4c2bf013880a6fe39f776c8df03197e7b226386",
            "mmlu_pro_with_replacement_per_seed.csv":
                "c4779955b33699aa70ca0fdbc2dc9435dbba729194985063b0a98fcc89e19e42",
            "mmlu_pro_without_replacement_per_seed.csv":
                "91650afde9719c7ec7a64fb50d33336dae55f49e0d4262057fb175d52c9ddef2",
            "best_baseline_summary.csv": "c47585da83cea33a446ef8c6307e4080e06e78030975c7eec634c432e1b365bd",
            "best_ablation_summary.csv": "30766c32e28b7455c39339cea4b21692e55673ca56f15d569c26394b49c9e405",
        },
        licence="Apache-2.0",
        source="skbwu/efficiently-evaluating-llms",
        commit="cb931006fcebe82c34445a2a0c6d7831314b77c7",
        description="The FAQ authors' released result logs: ESS multiplier, coverage, width per budget and seed",
        shape="2,213 real test models summarised per seed; 10 budgets x 100 seeds (MMLU-Pro, full history); "
        "summaries per data scenario and budget",
        notes="Built by scripts/faq_authors_logs.py; their ESS is (uniform width / FAQ width)^2 against "
        "Bernoulli-sampling Horvitz-Thompson, per seed (see data/faq_authors/SOURCE.md).",
    ),
)

DATASETS: Mapping[str, DatasetSpec] = MappingProxyType({s.name: s for s in _SPECS})
"""The registry: dataset name -> :class:`DatasetSpec` (read-only)."""


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class DatasetError(Exception):
    """No intact copy of a registered data file could be read (base of the two errors below)."""


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """A registered data file is absent (or unreadable) on every root of the search path."""


class DatasetChecksumError(DatasetError, ValueError):
    """A registered data file was found, but no copy has the registered sha256."""


# --------------------------------------------------------------------------------------------
# Search path and verification
# --------------------------------------------------------------------------------------------


def _cache_root() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "evalkit"


def dataset_search_path() -> list[tuple[Path, str]]:
    """The data roots evalkit searches, in order, each with where it came from.

    Returns
    -------
    list of (Path, str)
        ``(root, origin)`` pairs: the folders of ``EVALKIT_DATA`` (origin ``"EVALKIT_DATA"``),
        the repository's ``data/`` when evalkit runs from a clone (origin ``"repository data/"``),
        the data installed with the package (origin ``"installed package"``; listed in a clone
        only if it is there), then the user cache folder (origin ``"user cache"``). Read afresh on
        every call, so changing ``os.environ`` takes effect immediately.

    Examples
    --------
    >>> import evalkit as ek
    >>> origins = [origin for _, origin in ek.dataset_search_path()]
    >>> origins[-1]
    'user cache'
    >>> "repository data/" in origins or "installed package" in origins
    True
    """
    roots: list[tuple[Path, str]] = []
    env = os.environ.get(ENV_VAR, "")
    for part in env.split(os.pathsep):
        if part.strip():
            roots.append((Path(part.strip()).expanduser(), ENV_VAR))
    if REPO_DATA is not None:
        roots.append((REPO_DATA, "repository data/"))
    if PACKAGE_DATA is not None and (REPO_DATA is None or PACKAGE_DATA.is_dir()):
        roots.append((PACKAGE_DATA, "installed package"))
    roots.append((_cache_root(), "user cache"))
    return roots


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _spec(name: str) -> DatasetSpec:
    if not isinstance(name, str):
        raise EvalkitInputTypeError("name", f"dataset name must be a str, got {type(name).__name__}")
    try:
        return DATASETS[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(DATASETS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise EvalkitInputError(
            "name",
            f"unknown dataset {name!r}.{hint} Registered datasets: {sorted(DATASETS)} (see evalkit.dataset_list())"
        ) from None


def _what_to_do(spec: DatasetSpec) -> str:
    restore = (
        f"the repository's data/{spec.folder}/ holds this file; restore it with `git checkout -- data/{spec.folder}` "
        "in your clone"
        if REPO_DATA is not None
        else "the installed package holds this file; restore it with `pip install --force-reinstall evalkit`"
    )
    return (
        f"What to do: {restore}, or set {ENV_VAR} to a folder that "
        f"holds an intact copy of {spec.folder}/ (separate several folders with {os.pathsep!r}), "
        f"or copy {spec.folder}/ into {_cache_root()}/. evalkit never downloads data."
    )


def _read_first_intact(
    spec: DatasetSpec, filename: str, expected: str, roots: list[tuple[Path, str]], what: str, advice: str
) -> tuple[Path, bytes]:
    """Read ``<root>/<folder>/<filename>`` from the first root whose copy has sha256 ``expected``.

    The checksum is computed on the bytes returned, so what the caller parses is what was checked.
    Absent, unreadable and corrupted copies are skipped; the last two with a warning when an
    intact copy is found further on, and in the error otherwise.
    """
    attempts: list[tuple[Path, str, str]] = []
    n_bad = 0
    for root, origin in roots:
        candidate = root / spec.folder / filename
        try:
            data = candidate.read_bytes()
        except FileNotFoundError:
            attempts.append((candidate, origin, "absent"))
            continue
        except OSError as exc:  # a folder in place of the file, no permission, not a folder, ...
            reason = exc.strerror or str(exc)
            attempts.append((candidate, origin, f"cannot be read ({type(exc).__name__}: {reason})"))
            n_bad += 1
            continue
        actual = _sha256(data)
        if actual != expected:
            attempts.append((candidate, origin, f"corrupted or another version (sha256 {actual})"))
            n_bad += 1
            continue
        if n_bad:
            skipped = "; ".join(f"{p} ({o}): {r}" for p, o, r in attempts if r != "absent")
            warn(f"dataset {spec.name!r}: {filename!r} read from {candidate} ({origin}); skipped {skipped}")
        return candidate.resolve(), data
    env = os.environ.get(ENV_VAR)
    env_line = f"{ENV_VAR} is set to {env!r}." if env else f"{ENV_VAR} is not set."
    places = "\n".join(f"  - {p}  ({o}): {r}" for p, o, r in attempts)
    corrupted = any(r.startswith("corrupted") for _, _, r in attempts)
    problem = "has no intact copy" if corrupted else "was not found" if not n_bad else "could not be read"
    cls = DatasetChecksumError if corrupted else DatasetNotFoundError
    raise cls(
        f"dataset {spec.name!r}: {what} {filename!r} {problem}.\n"
        f"Places searched (in order):\n{places}\n{env_line}\n"
        f"Expected sha256: {expected}\n"
        f"Upstream source: {spec.provenance()}\n"
        f"{advice}"
    )


def _verified(name: str, filename: str) -> tuple[Path, bytes]:
    spec = _spec(name)
    if not isinstance(filename, str) or filename not in spec.files:
        raise EvalkitInputError(name, f"dataset {name!r} has no file {filename!r}; its files are {sorted(spec.files)}")
    return _read_first_intact(spec, filename, spec.files[filename], dataset_search_path(), "file", _what_to_do(spec))


def dataset_path(name: str, filename: str) -> Path:
    """The verified path of one file of a registered dataset.

    The file is looked up as ``<root>/<folder>/<filename>`` on :func:`dataset_search_path`; the
    first copy whose sha256 is the registered one wins (absent, unreadable or corrupted copies
    are skipped, see the module docstring). The check is made afresh on every call.

    Parameters
    ----------
    name : str
        Registered dataset name (see :func:`dataset_list`).
    filename : str
        One of ``dataset_info(name).files``.

    Returns
    -------
    Path
        Absolute path of a file whose checksum matched the registry when this function read it.
        evalkit's own loaders parse the bytes they checked; if you open the path yourself, the
        file may in principle have changed since.

    Raises
    ------
    ValueError
        Unknown dataset or file name.
    DatasetNotFoundError
        The file is absent or unreadable on every root (a ``FileNotFoundError``).
    DatasetChecksumError
        A copy was found, but none has the registered sha256 (a ``ValueError``).

    Examples
    --------
    >>> import evalkit as ek
    >>> ek.dataset_path("livecodebench_gen", "items.csv").name
    'items.csv'
    """
    return _verified(name, filename)[0]


def _found(spec: DatasetSpec) -> bool:
    return all(any((root / spec.folder / f).is_file() for root, _ in dataset_search_path()) for f in spec.files)


def dataset_list() -> pd.DataFrame:
    """The registered datasets and whether their files are on the search path.

    Returns
    -------
    DataFrame
        One row per dataset with columns ``name, description, shape, clusters, missingness,
        licence, source, commit, found`` (``found``: every file present on the search path;
        checksums are verified only when a file is used).

    Examples
    --------
    >>> import evalkit as ek
    >>> "chembench" in set(ek.dataset_list()["name"])
    True
    """
    rows = [
        {
            "name": s.name,
            "description": s.description,
            "shape": s.shape,
            "clusters": s.clusters,
            "missingness": s.missingness,
            "licence": s.licence,
            "source": s.source,
            "commit": s.commit,
            "found": _found(s),
        }
        for s in DATASETS.values()
    ]
    return pd.DataFrame(rows)


def dataset_info(name: str) -> DatasetSpec:
    """The registry entry of a dataset.

    Parameters
    ----------
    name : str
        Registered dataset name (see :func:`dataset_list`).

    Returns
    -------
    DatasetSpec
        Files and sha256, licence, source, description; ``.provenance()`` gives one line for
        notebooks.

    Raises
    ------
    ValueError
        Unknown dataset name.

    Examples
    --------
    >>> import evalkit as ek
    >>> ek.dataset_info("livecodebench_gen").licence
    'CC BY-SA 4.0'
    """
    return _spec(name)


# --------------------------------------------------------------------------------------------
# Verified, cached reads (return copies)
# --------------------------------------------------------------------------------------------

_PARSED: OrderedDict[tuple[str, str], Any] = OrderedDict()
"""(sha256, file name) -> parsed table or arrays. Keyed on the content, so never stale."""
_PARSED_MAX = 12


def _compression(filename: str) -> Literal["gzip", "xz"] | None:
    suffix = Path(filename).suffix
    return "gzip" if suffix == ".gz" else "xz" if suffix == ".xz" else None


def _parse(filename: str, data: bytes) -> Any:
    if filename.endswith(".npz"):
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    return pd.read_csv(io.BytesIO(data), compression=_compression(filename), low_memory=False)


def _parsed(sha: str, filename: str, data: bytes) -> Any:
    key = (sha, filename)
    if key in _PARSED:
        _PARSED.move_to_end(key)
    else:
        _PARSED[key] = _parse(filename, data)
        while len(_PARSED) > _PARSED_MAX:
            _PARSED.popitem(last=False)
    return _PARSED[key]


def _read_csv(name: str, filename: str) -> pd.DataFrame:
    table: pd.DataFrame = _parsed(DATASETS[name].files[filename], filename, _verified(name, filename)[1])
    return table.copy()


def _read_npz(name: str, filename: str) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = _parsed(DATASETS[name].files[filename], filename, _verified(name, filename)[1])
    return {k: v.copy() for k, v in arrays.items()}


# --------------------------------------------------------------------------------------------
# Loaders
# --------------------------------------------------------------------------------------------


def _choice(value: Any, allowed: tuple[str, ...], what: str) -> Any:
    if value not in allowed:
        raise EvalkitInputError(what, f"{what} must be one of {list(allowed)}, got {value!r}")
    return value


def _finish(df: pd.DataFrame, first: tuple[str, ...] = ()) -> pd.DataFrame:
    lead = ["model", "item", "cluster", "correct", "status", *first]
    cols = lead + [c for c in df.columns if c not in lead]
    return long_validate(df[cols].reset_index(drop=True))


def _load_mmlu_pro(*, cluster: str = "category", models: Any = None) -> pd.DataFrame:
    col = {"category": "group", "src": "src"}[_choice(cluster, ("category", "src"), "cluster")]
    raw = _read_csv("mmlu_pro_official", "responses_long.csv.xz")
    if models is not None:
        if not isinstance(models, (str, list, tuple, set)):
            raise EvalkitInputError("models", f"models must be an id or a list of ids, got {type(models).__name__}")
        wanted = [models] if isinstance(models, str) else list(models)
        if not wanted:
            raise EvalkitInputError("models", "models is empty: name at least one model (or pass None for all)")
        unknown = sorted(set(wanted) - set(raw["model"].unique()))
        if unknown:
            raise EvalkitInputError(
                "models", f"unknown MMLU-Pro models {unknown}; available: {sorted(raw['model'].unique())}")
        raw = raw[raw["model"].isin(wanted)]
    status = raw["status"].map({"ok": "ok", "parse_failure": "parse_failure", "no_record": "not_run"})
    if status.isna().any():
        raise ValueError(f"unexpected MMLU-Pro status values {sorted(set(raw['status'][status.isna()]))}")
    out = pd.DataFrame(
        {
            "model": raw["model"],
            "item": raw["item"].astype(str),
            "cluster": raw[col],
            "correct": raw["correct"].where(status == "ok"),
            "status": status,
            "category": raw["group"],
            "src": raw["src"],
            "pred": raw["pred"],
            "answer": raw["answer"],
        }
    )
    return _finish(out)


def _load_chembench(*, cluster: str = "topic") -> pd.DataFrame:
    col = {"topic": "group", "source_dir": "source_dir"}[_choice(cluster, ("topic", "source_dir"), "cluster")]
    raw = _read_csv("chembench", "responses_long.csv.xz")
    status = raw["status"].map({"ok": "ok", "refusal_flag": "refusal", "parse_failure": "parse_failure"})
    if status.isna().any():
        raise ValueError(f"unexpected ChemBench status values {sorted(set(raw['status'][status.isna()]))}")
    reported = raw["correct"].astype(float)
    difficulty = raw["difficulty"].str.removeprefix("difficulty-")
    out = raw.drop(columns=["correct", "status", "group", "difficulty"]).assign(
        cluster=raw[col],
        correct=reported.where(status == "ok"),
        status=status,
        correct_reported=reported,
        topic=raw["group"],
        difficulty=difficulty,
    )
    return _finish(out, ("correct_reported", "topic", "source_dir", "difficulty", "qtype", "triggered_refusal"))


def _load_livecodebench(*, cluster: str = "difficulty") -> pd.DataFrame:
    _choice(cluster, ("difficulty", "platform"), "cluster")
    raw = _read_csv("livecodebench_gen", "responses_long.csv.gz")
    out = pd.DataFrame(
        {
            "model": raw["model"],
            "item": raw["item"],
            "cluster": raw[cluster],
            "correct": raw["correct_majority"].astype(float),
            "status": "ok",
            "pass_at_1": raw["pass_at_1_pct"] / 100.0,
            "difficulty": raw["difficulty"],
            "platform": raw["platform"],
            "contest_date": raw["contest_date"],
        }
    )
    return _finish(out)


_ALPACA_DEFAULT = "weighted_alpaca_eval_gpt4_turbo"


def _alpaca_raw(annotator: str) -> pd.DataFrame:
    raw = _read_csv("alpaca_eval", "judgments_long.csv.xz")
    available = sorted(raw["annotator"].unique())
    if annotator not in available:
        raise EvalkitInputError("annotator", f"unknown AlpacaEval annotator {annotator!r}; available: {available}")
    return raw[raw["annotator"] == annotator]


def _load_alpaca(*, annotator: str = _ALPACA_DEFAULT) -> pd.DataFrame:
    raw = _alpaca_raw(annotator)
    status = raw["status"].map({"ok": "ok", "no_preference": "error"})
    if status.isna().any():
        raise ValueError(f"unexpected AlpacaEval status values {sorted(set(raw['status'][status.isna()]))}")
    out = pd.DataFrame(
        {
            "model": raw["model"],
            "item": raw["item_id"],
            "cluster": raw["dataset"],
            "correct": raw["model_wins"].where(status == "ok"),
            "status": status,
            "preference": raw["preference"],
            "reference_model": raw["reference_model"],
            "annotator": raw["annotator"],
            "len_1": raw["len_1"],
            "len_2": raw["len_2"],
        }
    )
    return _finish(out)


def _load_emotion(*, prompt: str | None = "task", icl: str | None = "icl1") -> pd.DataFrame:
    raw = _read_csv("uncertainty_emotion", "option_probs_long.csv.xz")
    for col, value in (("prompt", prompt), ("icl", icl)):
        if value is not None:
            _choice(value, tuple(sorted(raw[col].unique())), col)
            raw = raw[raw[col] == value]
    items = _read_csv("uncertainty_emotion", "items.csv.xz").set_index("id")["gold_label"]
    model = raw["model"]
    if prompt is None or icl is None:
        model = raw["model"] + "/" + raw["prompt"] + "/" + raw["icl"]
    probs = [f"p_{k}" for k in "ABCDEF"]
    out = pd.DataFrame(
        {
            "model": model,
            "item": raw["id"].astype(str),
            "cluster": raw["id"].map(items),
            "correct": raw["correct"].astype(float),
            "status": "ok",
            "prompt": raw["prompt"],
            "icl": raw["icl"],
            **{p: raw[p] for p in probs},
            "p_correct": raw["p_correct"],
            "answer": raw["answer"],
            "pred": raw["pred"],
        }
    )
    return _finish(out)


def _load_oll(**options: Any) -> pd.DataFrame:
    raise ValueError(
        "oll_v2_factor_model holds fitted factor models, not responses: use "
        "evalkit.oll_matrix_draw(suite, seed=...) for a semi-synthetic matrix (and .to_long() for "
        "its long table) or evalkit.oll_factors_load(suite) for U, V"
    )


_LOADERS: dict[str, Callable[..., pd.DataFrame]] = {
    "mmlu_pro_official": _load_mmlu_pro,
    "chembench": _load_chembench,
    "livecodebench_gen": _load_livecodebench,
    "alpaca_eval": _load_alpaca,
    "uncertainty_emotion": _load_emotion,
    "oll_v2_factor_model": _load_oll,
}

_LOADER_FILES: dict[str, tuple[str, ...]] = {
    "mmlu_pro_official": ("responses_long.csv.xz",),
    "chembench": ("responses_long.csv.xz",),
    "livecodebench_gen": ("responses_long.csv.gz",),
    "alpaca_eval": ("judgments_long.csv.xz",),
    "uncertainty_emotion": ("option_probs_long.csv.xz", "items.csv.xz"),
}
"""The files each loader reads (checked on every call; the in-process cache is keyed on their sha256)."""

_ITEM_COLUMNS: dict[str, tuple[str, ...]] = {
    "mmlu_pro_official": ("category", "src"),
    "chembench": ("topic", "source_dir", "difficulty", "qtype"),
    "livecodebench_gen": ("difficulty", "platform", "contest_date"),
    "alpaca_eval": (),
    "uncertainty_emotion": (),
}


def _options_key(options: Mapping[str, Any]) -> tuple:
    def freeze(k: str, v: Any) -> Any:
        out = ("__seq__", tuple(v)) if isinstance(v, (list, tuple, set, np.ndarray, pd.Index, pd.Series)) else v
        try:
            hash(out)
        except TypeError:
            raise EvalkitInputTypeError(
                k, f"{k} must be a str, a number or a list of them, got {type(v).__name__} {v!r}") from None
        return out

    return tuple(sorted((k, freeze(k, v)) for k, v in options.items()))


@functools.lru_cache(maxsize=8)
def _load_cached(name: str, options_key: tuple, shas: tuple[str, ...]) -> pd.DataFrame:
    options = {k: (list(v[1]) if isinstance(v, tuple) and v and v[0] == "__seq__" else v) for k, v in options_key}
    return _LOADERS[name](**options)


def _check_options(spec: DatasetSpec, options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - set(spec.load_options))
    if unknown and spec.name != "oll_v2_factor_model":
        raise TypeError(
            f"dataset_load({spec.name!r}) got unknown options {unknown}; "
            f"its options are {list(spec.load_options) or 'none'}"
        )


def dataset_load(name: str, **options: Any) -> pd.DataFrame:
    """Load a registered dataset as the evalkit long table.

    The table has ``model, item, cluster, correct, status`` (see :mod:`evalkit.data`) and the
    extra columns listed below; it passes :func:`evalkit.long_validate`. ``correct`` is NaN
    whenever ``status != "ok"``. The files are checked against their sha256 on every call; parsed
    tables are cached in-process (keyed on that checksum) and each call returns a copy.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    **options
        Per dataset:

        ``mmlu_pro_official``
            ``cluster="category"`` (14 subjects, default) or ``"src"`` (91 original sources);
            ``models=`` a model id or list of ids to keep. Status: ``ok``, ``parse_failure``
            (no answer letter extracted; the official scorer guesses at random instead),
            ``not_run`` (question absent from the model's output file). Extras: ``category,
            src, pred, answer``. 31 x 12,032 rows.
        ``chembench``
            ``cluster="topic"`` (9, default) or ``"source_dir"`` (67). Status: ``ok``,
            ``refusal`` (keyword-based refusal flag without parse failure), ``parse_failure``.
            Extras: ``correct_reported`` (ChemBench's own 0/1 score, also on non-ok rows),
            ``topic, source_dir, difficulty`` (human: ``basic``/``advanced``/NaN), ``qtype,
            triggered_refusal`` and the upstream report columns.
        ``livecodebench_gen``
            ``cluster="difficulty"`` (easy/medium/hard, default) or ``"platform"``.
            ``correct`` = pass@1 >= 50% (``correct_majority``). Extras: ``pass_at_1`` (0-1),
            ``difficulty, platform, contest_date``.
        ``alpaca_eval``
            ``annotator="weighted_alpaca_eval_gpt4_turbo"`` (the AlpacaEval 2 judge; others:
            ``alpaca_eval_gpt4``, ``alpaca_eval_cot_gpt4_turbo_fn``, ``alpaca_eval_gpt4_turbo_fn``,
            ``bedrock_claude``). One row per model and instruction judged against the
            reference model; ``correct`` = the model beat the reference (``preference > 1.5``;
            draws count as not winning, as upstream); ``cluster`` = source dataset (5); a
            missing judgment is ``error``. (model, instruction) pairs the judge never saw are
            absent from the table and become ``not_run`` in :func:`dataset_matrix`. Extras:
            ``preference, reference_model, annotator, len_1, len_2``. See also
            :func:`alpaca_pairs`.
        ``uncertainty_emotion``
            ``prompt="task"`` and ``icl="icl1"`` (10 models) select one prompting set-up;
            ``None`` keeps all, and the model id then becomes ``model/prompt/icl``.
            ``cluster`` = the gold emotion (Joy, Sadness, Anger, Fear). Extras: ``prompt, icl,
            p_A .. p_F`` (softmax over the six options), ``p_correct, answer, pred``.
        ``oll_v2_factor_model``
            Not a response table: use :func:`oll_matrix_draw` or :func:`oll_factors_load`.

    Returns
    -------
    DataFrame
        The long table.

    Raises
    ------
    ValueError
        Unknown dataset or option value. TypeError: unknown option name.
    DatasetNotFoundError, DatasetChecksumError
        See :func:`dataset_path`.
    """
    spec = _spec(name)
    _check_options(spec, options)
    if name == "oll_v2_factor_model":
        return _load_oll(**options)
    files = _LOADER_FILES[name]
    for f in files:  # read and checked on every call: a file changed on disk never gets through
        _verified(name, f)
    return _load_cached(name, _options_key(options), tuple(spec.files[f] for f in files)).copy()


def dataset_matrix(name: str, **options: Any) -> EvalMatrix:
    """Load a registered dataset as an :class:`~evalkit.data.EvalMatrix`.

    ``long_to_matrix(dataset_load(name, **options), item_columns=...)`` with useful per-item
    columns in ``item_info``: ``category, src`` (MMLU-Pro), ``topic, source_dir, difficulty,
    qtype`` (ChemBench), ``difficulty, platform, contest_date`` (LiveCodeBench). Cells absent from
    the long table get status ``not_run``.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS` (not ``oll_v2_factor_model``: use :func:`oll_matrix_draw`).
    **options
        As for :func:`dataset_load`.

    Returns
    -------
    EvalMatrix
    """
    df = dataset_load(name, **options)
    return long_to_matrix(df, item_columns=_ITEM_COLUMNS.get(name, ()))


_ITEM_FILES: dict[str, tuple[str, str]] = {
    "mmlu_pro_official": ("items.csv.xz", "question_id"),
    "chembench": ("items.csv.xz", "question_name"),
    "livecodebench_gen": ("items.csv", "question_id"),
    "alpaca_eval": ("items.csv.xz", "item_id"),
    "uncertainty_emotion": ("items.csv.xz", "id"),
}


def dataset_items(name: str) -> pd.DataFrame:
    """Item metadata of a dataset: ids, labels and numbers computed from the item texts.

    The texts themselves (questions, prompts, instructions, contexts) are not part of evalkit;
    ``scripts/build_data.py`` computed their lengths from the upstream copies. Where a copy of the
    upstream data is available, :func:`dataset_texts` reads the texts.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`. For ``oll_v2_factor_model`` both suites' item tables are
        stacked with a ``suite`` column.

    Returns
    -------
    DataFrame
        ``item`` (the id, as str, used in the long table), then the upstream columns without the
        texts, then for each text column ``<col>_chars`` (characters) and ``<col>_words``
        (whitespace-separated words):

        ``mmlu_pro_official``
            ``question_id, category, src, answer, answer_index, n_options, question_chars,
            question_words``.
        ``chembench``
            ``question_name, qtype, keywords, topic, requires, difficulty, source_dir,
            content_chars, content_words, prompt_chars, prompt_words`` (``content`` is the
            question, ``prompt`` the full prompt with its answer-format template).
        ``livecodebench_gen``
            ``question_id, platform, difficulty, contest_date`` (upstream has no texts).
        ``alpaca_eval``
            ``item_id, dataset, instruction_chars, instruction_words``.
        ``uncertainty_emotion``
            ``id, source, task, answer, gold_label, context_chars, context_words``.

    Raises
    ------
    ValueError
        Unknown dataset name.
    DatasetNotFoundError, DatasetChecksumError
        See :func:`dataset_path`.

    Examples
    --------
    >>> import evalkit as ek
    >>> items = ek.dataset_items("alpaca_eval")
    >>> list(items.columns)
    ['item', 'item_id', 'dataset', 'instruction_chars', 'instruction_words']
    >>> len(items)
    805
    """
    spec = _spec(name)
    if name == "oll_v2_factor_model":
        parts = [oll_factors_load(s)[2].assign(suite=s) for s in _OLL_SUITES]
        return pd.concat(parts, ignore_index=True)
    if name not in _ITEM_FILES:
        raise EvalkitInputError(name, f"dataset {name!r} has no item table")
    filename, id_col = _ITEM_FILES[spec.name]
    items = _read_csv(name, filename)
    items.insert(0, "item", items[id_col].astype(str))
    return items


def dataset_texts(name: str, *, root: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """The item texts of a dataset, read from a copy of the upstream data (not part of evalkit).

    evalkit carries only numbers computed from the texts (see :func:`dataset_items`). Project
    scripts that compute such numbers (``scripts/build_data.py``, text embeddings) read the
    texts here, from the upstream file registered in ``dataset_info(name).texts`` and checked
    against its sha256 in ``dataset_info(name).upstream``.

    Parameters
    ----------
    name : str
        A dataset with texts: ``mmlu_pro_official`` (``question``, ``options``), ``chembench``
        (``content``, ``prompt``, ``description``, ``target``), ``alpaca_eval``
        (``instruction``), ``uncertainty_emotion`` (``question``, ``context``).
    root : path, optional
        The folder holding the upstream dataset folders (for example the evalkit workspace's
        ``shared/data``). None searches :func:`dataset_search_path` (``EVALKIT_DATA`` first).

    Returns
    -------
    DataFrame
        The upstream items table (ids, labels and texts), preceded by ``item``.

    Raises
    ------
    ValueError
        Unknown dataset, or a dataset without texts.
    DatasetNotFoundError, DatasetChecksumError
        No intact upstream copy on the roots searched.
    """
    spec = _spec(name)
    if not spec.texts:
        raise EvalkitInputError(name,
            f"dataset {name!r} has no item texts; datasets with texts: "
            f"{sorted(s.name for s in DATASETS.values() if s.texts)}"
        )
    roots = dataset_search_path() if root is None else [(Path(root).expanduser(), "root argument")]
    advice = (
        f"What to do: item texts are not part of evalkit (data/ holds only numbers computed from "
        f"them); pass root= or set {ENV_VAR} to a copy of the upstream data that holds "
        f"{spec.folder}/{spec.texts} (in the evalkit workspace: shared/data). Upstream: {spec.source_url}."
    )
    _, data = _read_first_intact(spec, spec.texts, spec.upstream[spec.texts], roots, "upstream text file", advice)
    items = _parse(spec.texts, data)
    items.insert(0, "item", items[_ITEM_FILES[name][1]].astype(str))
    return items


# --------------------------------------------------------------------------------------------
# AlpacaEval: model-vs-model pairs
# --------------------------------------------------------------------------------------------


def alpaca_pairs(annotator: str = _ALPACA_DEFAULT, seed: int | None = None) -> pd.DataFrame:
    """Model-vs-model comparisons derived from AlpacaEval's judgments against one reference.

    Under one judge every model is compared with the same reference output on each instruction,
    with a preference ``p`` in ``[1, 2]`` (1 = reference preferred, 2 = model preferred,
    continuous for the weighted judge). For two models ``a`` and ``b`` judged on the same
    instruction, ``a`` beats ``b`` when ``p_a > p_b``; equal preferences (ties) are dropped, as
    ECC does for score tables. The upstream draw code ``0`` is read as ``1.5``; missing
    judgments and absent rows give no comparison. Used by Bradley-Terry and ECC.

    Parameters
    ----------
    annotator : str
        The judge (default the AlpacaEval 2 judge ``weighted_alpaca_eval_gpt4_turbo``). Only
        models judged against the same reference are compared: for an annotator with two
        reference models, each model is compared only with models sharing its reference.
    seed : int or None
        None: rows sorted by item, then by the models' order of appearance. An int shuffles
        the rows with that seed (for order-sensitive methods such as online Elo).

    Returns
    -------
    DataFrame
        Columns ``item, cluster, winner, loser`` (cluster = the instruction's source dataset),
        one row per untied pair of models on an item.
    """
    raw = _alpaca_raw(annotator)
    raw = raw[raw["status"] == "ok"]
    parts = []
    for _, sub in raw.groupby("reference_model", sort=True):
        pref = sub.pivot(index="model", columns="item_id", values="preference")
        pref = pref.replace(0.0, 1.5)
        models = pref.index.to_numpy(dtype=object)
        items = pref.columns.to_numpy(dtype=object)
        P = pref.to_numpy(dtype=float)
        a, b = np.triu_indices(len(models), k=1)
        diff = P[a] - P[b]  # (n_pairs, n_items), NaN where either is missing
        pair_idx, item_idx = np.nonzero(~np.isnan(diff) & (diff != 0))
        a_wins = diff[pair_idx, item_idx] > 0
        ia, ib = a[pair_idx], b[pair_idx]
        parts.append(
            pd.DataFrame(
                {
                    "item": items[item_idx],
                    "winner": models[np.where(a_wins, ia, ib)],
                    "loser": models[np.where(a_wins, ib, ia)],
                }
            )
        )
    out = pd.concat(parts, ignore_index=True)
    cluster = raw.drop_duplicates("item_id").set_index("item_id")["dataset"]
    out.insert(1, "cluster", out["item"].map(cluster).to_numpy())
    if seed is None:
        out = out.sort_values("item", kind="stable").reset_index(drop=True)
    else:
        order = as_rng(seed).permutation(len(out))
        out = out.iloc[order].reset_index(drop=True)
    return out.astype({"item": str, "cluster": str, "winner": str, "loser": str})


# --------------------------------------------------------------------------------------------
# Open LLM Leaderboard v2 factor models
# --------------------------------------------------------------------------------------------

OllSuite = Literal["mmlu_pro", "bbh_gpqa_ifeval_math_musr"]
_OLL_SUITES: tuple[OllSuite, ...] = ("mmlu_pro", "bbh_gpqa_ifeval_math_musr")
_OLL_CHUNK_CELLS = 1 << 22  # ~4M cells (16 MB of float32) per chunk of models


def oll_factors_load(suite: OllSuite) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """The fitted logistic factor model of one Open LLM Leaderboard v2 suite.

    ``P(model i answers item j correctly) = sigmoid(U[i] @ V[j])`` as fitted by the FAQ paper
    (Wu et al., "Efficiently Evaluating LLM Performance with Statistical Guarantees"). These
    are model parameters, not responses.

    Parameters
    ----------
    suite : {"mmlu_pro", "bbh_gpqa_ifeval_math_musr"}
        MMLU-Pro (U 2,212 x 64, V 12,032 x 64) or BBH+GPQA+IFEval+MATH+MuSR (U 2,211 x 64,
        V 9,574 x 64, 38 subtasks).

    Returns
    -------
    U : (n_models, 64) float32 array
    V : (n_items, 64) float32 array
    items : DataFrame
        One row per item of ``V``: ``item`` (id as str), ``item_index`` and, for the second
        suite, ``subtask, benchmark, within_subtask_index``.
    """
    _choice(suite, _OLL_SUITES, "suite")
    z = _read_npz("oll_v2_factor_model", f"{suite}_factors_nfobs=None_p=1.0.npz")
    items = _read_csv("oll_v2_factor_model", f"{suite}_items.csv")
    U, V = z["U"], z["V"]
    if V.shape[0] != len(items) or U.shape[1] != V.shape[1]:
        raise ValueError(f"inconsistent factor files for {suite}: U {U.shape}, V {V.shape}, {len(items)} items")
    items.insert(0, "item", items["item_index"].map(lambda i: f"{suite}:{i:05d}"))
    return U, V, items


def oll_matrix_draw(
    suite: OllSuite,
    *,
    n_models: int | None = None,
    n_items: int | None = None,
    seed: int,
    dtype: npt.DTypeLike = np.float32,
) -> EvalMatrix:
    """Draw a semi-synthetic leaderboard matrix ``Y ~ Bernoulli(sigmoid(U V'))``.

    **These are draws from a fitted model of the real Open LLM Leaderboard v2, not its real
    responses**: say so wherever they are shown. Every cell is observed (status ``ok``).

    Parameters
    ----------
    suite : {"mmlu_pro", "bbh_gpqa_ifeval_math_musr"}
        Which fitted model (see :func:`oll_factors_load`).
    n_models, n_items : int or None
        Subsample this many models / items without replacement (kept in their original order);
        None keeps all (2,212 x 12,032 or 2,211 x 9,574).
    seed : int
        Seeds the subsampling and the Bernoulli draws (same seed -> same matrix).
    dtype : numpy float dtype
        dtype of ``Y`` (default float32: the full MMLU-Pro draw is ~106 MB; float64 doubles it).

    Returns
    -------
    EvalMatrix
        ``models`` are ``oll_<row of U>`` (names are not in the upstream files); ``items`` are
        ``<suite>:<item_index>``; ``clusters`` are the subtask (second suite) or the single
        label ``"mmlu_pro"`` (the MMLU-Pro factor items carry no categories); ``item_info``
        holds the items table.

    Notes
    -----
    The logits are computed chunk by chunk over models (float32), so the full draw needs little
    more memory than ``Y`` and its ``status`` codes.

    Raises
    ------
    ValueError
        Unknown suite, or ``n_models`` / ``n_items`` outside ``1 .. available``.
    DatasetNotFoundError, DatasetChecksumError
        See :func:`dataset_path`.
    """
    U, V, items = oll_factors_load(suite)
    rng = as_rng(seed)
    rows = _subsample(rng, U.shape[0], n_models, "n_models")
    cols = _subsample(rng, V.shape[0], n_items, "n_items")
    Us = U[rows].astype(np.float32)
    Vt = np.ascontiguousarray(V[cols].astype(np.float32).T)
    Y = np.empty((len(rows), len(cols)), dtype=dtype)
    step = max(1, _OLL_CHUNK_CELLS // max(1, len(cols)))
    for start in range(0, len(rows), step):
        logits = Us[start : start + step] @ Vt
        u = rng.random(logits.shape, dtype=np.float32)
        np.negative(logits, out=logits)
        np.exp(logits, out=logits)
        logits += 1.0
        np.reciprocal(logits, out=logits)  # in place: sigmoid(U V') for this chunk of models
        Y[start : start + step] = u < logits
    info = items.iloc[cols].set_index("item")
    clusters = info["subtask"].to_numpy(dtype=str) if "subtask" in info.columns else np.full(len(cols), "mmlu_pro")
    models = np.array([f"oll_{i:04d}" for i in rows])
    status = np.zeros(Y.shape, dtype=np.int8)
    return EvalMatrix(Y, status, models, info.index.to_numpy(dtype=str), clusters, info)


def _subsample(rng: np.random.Generator, n: int, k: int | None, what: str) -> np.ndarray:
    if k is None:
        return np.arange(n)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise EvalkitInputError(what, f"{what} must be an int between 1 and {n} (or None for all), got {k!r}")
    return np.sort(rng.choice(n, size=int(k), replace=False))


# --------------------------------------------------------------------------------------------
# Committed benchmark results
# --------------------------------------------------------------------------------------------

RESULTS_DIRS: tuple[Path, ...] = tuple(
    folder
    for folder in (
        None if _SOURCE_TREE is None else _SOURCE_TREE / "benchmarks" / "results",
        _package_folder("_results"),
    )
    if folder is not None
)
"""Where :func:`results_load` looks for ``<name>.json``, in order: the repository's
``benchmarks/results/`` when evalkit runs from a clone, then the copy installed with the package
(``evalkit/_results``)."""


def results_load(name: str) -> dict[str, Any]:
    """Read the committed results of a benchmark run: ``benchmarks/results/<name>.json``.

    A lesson that quotes a run too long to repeat in the lesson reads the figure with this and
    prints it, so that the number in the prose is the number in the file.

    Parameters
    ----------
    name : str
        The benchmark's name without ``bench_`` (``"active"`` for ``benchmarks/bench_active.py``),
        or a named variant of a run (``"active-loo"``).

    Returns
    -------
    dict
        The whole record: ``benchmark``, ``command``, ``date``, ``evalkit_commit``, ``machine``
        and ``results`` (what the benchmark measured).

    Raises
    ------
    EvalkitInputError
        ``name`` is not the name of a committed results file (the message lists those that are).
    """
    import json

    from .errors import EvalkitInputError

    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise EvalkitInputError("name", f"name must be a benchmark's name such as 'active', got {name!r}")
    for folder in RESULTS_DIRS:
        path = folder / f"{name}.json"
        if path.is_file():
            return dict(json.loads(path.read_text(encoding="utf-8")))
    known = sorted({p.stem for folder in RESULTS_DIRS if folder.is_dir() for p in folder.glob("*.json")})
    raise EvalkitInputError("name", f"name {name!r} has no committed results file; known: {known}")


EXAMPLES: tuple[str, ...] = ("tests/fixtures/eval_logs", "scripts/make_mmlu_inspect_log.py")
"""The example material of lesson 09, as paths relative to the repository: the eval logs written by
Inspect and lm-evaluation-harness, and the script that writes the MMLU-Pro Inspect logs. The wheel
carries them under the same relative paths in ``evalkit/_examples`` (``setup.py``)."""

EXAMPLES_DIRS: tuple[Path, ...] = tuple(
    folder for folder in (_SOURCE_TREE, _package_folder("_examples")) if folder is not None
)
"""Where :func:`example_path` looks, in order: the repository when evalkit runs from a clone, then
the copy installed with the package (``evalkit/_examples``)."""


def example_path(rel: str) -> Path:
    """The path of a file or folder of lesson 09's example material, in a clone or an installed evalkit.

    Parameters
    ----------
    rel : str
        A path relative to the repository, inside one of :data:`EXAMPLES` (for example
        ``"tests/fixtures/eval_logs/inspect_ai/logs/eval"``).

    Returns
    -------
    Path
        The absolute path in the first folder of :data:`EXAMPLES_DIRS` that has it.

    Raises
    ------
    EvalkitInputError
        ``rel`` is not a relative path inside :data:`EXAMPLES`.
    EvalkitInputNotFoundError
        No folder of :data:`EXAMPLES_DIRS` has it (the message says what to do).

    Examples
    --------
    >>> import evalkit as ek
    >>> ek.example_path("scripts/make_mmlu_inspect_log.py").name
    'make_mmlu_inspect_log.py'
    """
    if not isinstance(rel, str):
        raise EvalkitInputTypeError("rel", f"rel must be a str, got {type(rel).__name__}")
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    inside = [e for e in EXAMPLES if parts[: len(PurePosixPath(e).parts)] == PurePosixPath(e).parts]
    if not inside or ".." in parts:
        raise EvalkitInputError("rel", f"rel must be a relative path inside one of {list(EXAMPLES)}, got {rel!r}")
    for folder in EXAMPLES_DIRS:
        path = folder.joinpath(*parts)
        if path.exists():
            return path.resolve()
    raise EvalkitInputNotFoundError(
        "rel", f"rel {rel!r} was not found in {[str(f) for f in EXAMPLES_DIRS]}: restore it with "
        f"`git checkout -- {inside[0]}` in a clone, or reinstall evalkit (`pip install --force-reinstall evalkit`)")


# --------------------------------------------------------------------------------------------
# Provenance of a notebook's outputs: the software they were computed with
# --------------------------------------------------------------------------------------------

_VERSIONED = ("numpy", "scipy", "pandas", "matplotlib")


def _blas_info() -> dict[str, Any] | None:
    """The BLAS numpy uses: library, version, the kernel chosen for this CPU and its threads.

    ``None`` when it cannot be read. OpenBLAS picks a kernel by CPU when it loads
    (``OPENBLAS_CORETYPE`` overrides it); the last digits of some results depend on it.
    """
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    for lib in threadpool_info():
        if lib.get("user_api") == "blas":
            return {k: lib.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
    return None


def versions() -> dict[str, str]:
    """The versions of Python, evalkit and its numerical libraries, and the BLAS numpy uses.

    Returns
    -------
    dict
        ``{"python": ..., "evalkit": ..., "numpy": ..., "scipy": ..., "pandas": ...,
        "matplotlib": ..., "blas": ...}``; ``blas`` is ``"<library> <version> (<kernel>)"`` or
        ``"unknown"``.

    Examples
    --------
    >>> v = versions()
    >>> sorted(v) == sorted(["python", "evalkit", "numpy", "scipy", "pandas", "matplotlib", "blas"])
    True
    """
    import importlib
    import platform

    from . import __version__

    out = {"python": platform.python_version(), "evalkit": __version__}
    for name in _VERSIONED:
        out[name] = str(importlib.import_module(name).__version__)
    blas = _blas_info()
    out["blas"] = "unknown" if blas is None else f"{blas['internal_api']} {blas['version']} ({blas['architecture']})"
    return out


def show_versions() -> None:
    """Print :func:`versions` on one line, so that saved outputs say what computed them.

    Examples
    --------
    >>> show_versions()  # doctest: +ELLIPSIS
    Python ... · evalkit ... · numpy ... · scipy ... · pandas ... · matplotlib ... · BLAS ...
    """
    v = versions()
    print(" · ".join([f"Python {v['python']}", f"evalkit {v['evalkit']}"]
                     + [f"{name} {v[name]}" for name in _VERSIONED] + [f"BLAS {v['blas']}"]))
