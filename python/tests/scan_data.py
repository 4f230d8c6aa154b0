"""Generated files for the scale-out test and benchmark: valid ones of several sizes and
dtypes, and invalid ones (a trailing byte, a truncated data region, a broken header)."""

from __future__ import annotations

import pathlib
from typing import List

import numpy as np
from safetensors.numpy import save


def generate(directory: pathlib.Path, count: int, elements: int = 64, seed: int = 11) -> List[str]:
    """`count` files in `directory`; every seventh is invalid in one of three ways."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    dtypes = [np.float32, np.float16, np.int64, np.uint8, np.float64]
    paths = []
    for i in range(count):
        n = int(rng.integers(1, elements + 1))
        tensors = {
            f"layer.{j}.weight": rng.standard_normal(n).astype(dtypes[(i + j) % len(dtypes)])
            for j in range(1 + i % 4)
        }
        data = save(tensors, metadata={"i": str(i)})
        if i % 7 == 3:
            data += b"\0"  # DATA-TRAILING
        elif i % 7 == 5:
            data = data[:-1]  # DATA-TRUNCATED
        elif i % 7 == 6:
            data = data[:9] + b"[" + data[10:]  # JSON-SYNTAX or a schema fault
        path = directory / f"f{i:06d}.safetensors"
        path.write_bytes(data)
        paths.append(str(path))
    return paths
