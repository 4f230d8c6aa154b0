"""stcheck's Python faces beside safetensors', ratios from one alternated run (issue 21).

    target/torch-venv/bin/python benches/python/compare.py [--rounds 3] [--keep]

(python/setup-torch-venv.sh makes that environment; without torch the torch rows are left
out.) Makes, under target/bench-python (deleted at the end unless --keep): 1,000 files of 300
F32 tensors of 1 KiB, 10,000 files of one 64-byte tensor, and one file of 1 GiB (16 tensors of
64 MiB). Every file is read once first, so every run reads from the page cache. Each round runs
every pair once, ours then theirs, alternating; the table shows the median of the rounds and
the ratio ours/theirs of those medians (below 1: stcheck is faster). A benchmark, not a test:
it asserts nothing. On a shared machine the figures move from run to run; compare ratios, not
times, and only within one run.

Pairs:
- check loop: ``stcheck.check(path)`` (a Report) vs ``safetensors.safe_open(path, "np").keys()``;
- load np: ``stcheck.load_file(path)`` vs ``safetensors.numpy.load_file(path)``;
- load pt: ``stcheck.load_file(path, framework="pt")`` vs ``safetensors.torch.load_file(path)``;
- on the 1 GiB file also ``mmap=True`` (stcheck's zero-copy load) beside the same two:
  ``safetensors.torch.load_file`` maps the file and reads nothing until a tensor is used, which
  only ``mmap=True`` matches; the default reads (and checks) every byte it hands out.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import statistics
import time
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
import safetensors
import safetensors.numpy

import stcheck

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORK = ROOT / "target" / "bench-python"

try:
    import safetensors.torch
    import torch  # noqa: F401
except ImportError:
    TORCH = False
else:
    TORCH = True


def make(directory: pathlib.Path, count: int, tensors: int, elements: int) -> List[str]:
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {f"layer{i:04d}.weight": np.full(elements, i, dtype=np.float32) for i in range(tensors)}
    paths = []
    for i in range(count):
        path = directory / f"f{i:05d}.safetensors"
        if not path.exists():
            safetensors.numpy.save_file(arrays, str(path), metadata={"format": "pt"})
        paths.append(str(path))
    return paths


def warm(paths: Sequence[str]) -> None:
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def loop(fn: Callable[[str], object], paths: Sequence[str]) -> Callable[[], None]:
    def run() -> None:
        for p in paths:
            fn(p)

    return run


def keys(path: str) -> object:
    with safetensors.safe_open(path, framework="np") as f:
        return f.keys()


def pairs(paths: Sequence[str], big: bool) -> List[Tuple[str, Callable[[], None], Callable[[], None]]]:
    out = [
        ("check loop vs safe_open().keys()", loop(stcheck.check, paths), loop(keys, paths)),
        (
            "load_file vs safetensors.numpy",
            loop(stcheck.load_file, paths),
            loop(safetensors.numpy.load_file, paths),
        ),
    ]
    if TORCH:
        out.append(
            (
                'load_file(framework="pt") vs safetensors.torch',
                loop(lambda p: stcheck.load_file(p, framework="pt"), paths),
                loop(safetensors.torch.load_file, paths),
            )
        )
    if big:
        out.append(
            (
                "load_file(mmap=True) vs safetensors.numpy",
                loop(lambda p: stcheck.load_file(p, mmap=True), paths),
                loop(safetensors.numpy.load_file, paths),
            )
        )
        if TORCH:
            out.append(
                (
                    'load_file(framework="pt", mmap=True) vs safetensors.torch',
                    loop(lambda p: stcheck.load_file(p, framework="pt", mmap=True), paths),
                    loop(safetensors.torch.load_file, paths),
                )
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep target/bench-python")
    args = ap.parse_args()
    try:
        sets: Dict[str, List[str]] = {
            "1,000 files x 300 tensors": make(WORK / "wide", 1000, 300, 256),
            "10,000 files x 1 tensor": make(WORK / "tiny", 10000, 1, 16),
            "1 file of 1 GiB": make(WORK / "big", 1, 16, 16 << 20),
        }
        rows = []
        for name, paths in sets.items():
            warm(paths)
            for what, ours, theirs in pairs(paths, "GiB" in name):
                if "check" in what and "GiB" in name:
                    continue
                ours(), theirs()  # warm-up: imports, first calls
                a: List[float] = []
                b: List[float] = []
                for _ in range(args.rounds):
                    a.append(timed(ours))
                    b.append(timed(theirs))
                ma, mb = statistics.median(a), statistics.median(b)
                rows.append((name, what, ma, mb))
                print(f"  {name}: {what}: {ma:.3f} s vs {mb:.3f} s", flush=True)
        print()
        print(f"median of {args.rounds} alternated rounds; ratio = stcheck / safetensors (below 1: stcheck faster)")
        print()
        print("| set | what | stcheck | safetensors | ratio | speed-up |")
        print("|---|---|---:|---:|---:|---:|")
        for name, what, ma, mb in rows:
            print(f"| {name} | {what} | {ma:.3f} s | {mb:.3f} s | {ma / mb:.2f} | {mb / ma:.2f}x |")
    finally:
        if not args.keep:
            shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
