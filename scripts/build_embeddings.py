"""Write the local text embeddings ECC reads: ``data/embeddings/<dataset>.npz``.

For MMLU-Pro (question and options), AlpacaEval (instruction) and ChemBench (question), embed the
item texts by TF-IDF + truncated SVD (:func:`evalkit.ecc_embeddings_build`; deterministic, no
model download) and store only numbers: item ids, unit embeddings as float16 and the singular
values. The texts themselves are never written. The zip archives are written with a fixed
timestamp, so the same numbers give the same bytes; the sha256 of each file is printed for the
registry entry ``embeddings`` in ``evalkit/datasets.py``.

Usage (from the repository root)::

    EVALKIT_DATA=/path/to/shared/data PYTHONPATH=. python scripts/build_embeddings.py [--dim 64]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import zipfile
from pathlib import Path

import numpy as np

import evalkit as ek

OUT = Path(__file__).resolve().parent.parent / "data" / "embeddings"
DATASETS = ("mmlu_pro_official", "alpaca_eval", "chembench")


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez_compressed`` with fixed zip timestamps (byte-for-byte reproducible)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in DATASETS:
        items, X, s = ek.ecc_embeddings_build(name, args.dim)
        path = args.out / f"{name}.npz"
        write_npz(path, {"item": items.astype(str), "X": X.astype(np.float16), "singular_values": s.astype(np.float32)})
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        print(f"{name:20s} {X.shape[0]:6d} x {X.shape[1]}  {path.stat().st_size / 1e6:.2f} MB  sha256 {sha}")


if __name__ == "__main__":
    main()
