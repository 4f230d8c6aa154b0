"""The loader's cost beside safetensors': ``stcheck.load_file`` (the default: the file read into
memory and checked there), ``stcheck.load_file(mmap=True)`` (zero-copy views of a map) and
``safetensors.numpy.load_file``.

    target/python-venv/bin/python python/bench_loader.py [--big-mib 1024] [--files 1000]
        [--tensors 300] [--repeat 5]

Makes two sets under target/bench-loader (kept for the next run): one file of BIG_MIB MiB (one
F32 tensor per 64 MiB) and FILES files of TENSORS small tensors each (1 KiB of F32 each, as a
checkpoint's many small tensors). Every file is read once first, so every run reads from the
page cache. The three loaders run in turn within each round, REPEAT rounds (alternated, so a
disturbance from the other work of a shared machine hits every loader alike); the table shows
the median and the best round, and each loader's ratio to safetensors' median. "load" is the
call alone; "load+touch" also reads one byte of every 4 KiB page of every array, which is what
a map defers until the arrays are used.
"""

from __future__ import annotations

import argparse
import gc
import pathlib
import statistics
import time
from typing import Callable, Dict, List

import numpy as np
import safetensors.numpy

import stcheck

ROOT = pathlib.Path(__file__).resolve().parents[1]


def big_file(directory: pathlib.Path, mib: int) -> List[str]:
    path = directory / f"big-{mib}mib.safetensors"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(5)
        chunk = 64 << 18  # 64 MiB of F32
        tensors = {
            f"w{i:03d}": rng.standard_normal(min(chunk, (mib << 18) - i * chunk), dtype=np.float32)
            for i in range((mib + 63) // 64)
        }
        safetensors.numpy.save_file(tensors, str(path))
    return [str(path)]


def many_files(directory: pathlib.Path, count: int, tensors: int) -> List[str]:
    directory = directory / f"many-{count}x{tensors}"
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(6)
    paths = []
    for i in range(count):
        path = directory / f"m{i:05d}.safetensors"
        if not path.exists():
            safetensors.numpy.save_file(
                {f"layer.{j}.weight": rng.standard_normal(256, dtype=np.float32) for j in range(tensors)},
                str(path),
            )
        paths.append(str(path))
    return paths


def warm(paths: List[str]) -> None:
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def touch(arrays: Dict[str, np.ndarray]) -> int:
    total = 0
    for a in arrays.values():
        if a.size:
            total += int(a.reshape(-1).view(np.uint8)[::4096].sum())
    return total


LOADERS: Dict[str, Callable[[str], Dict[str, np.ndarray]]] = {
    "stcheck (default: read, checked)": stcheck.load_file,
    "stcheck mmap=True (zero-copy)": lambda p: stcheck.load_file(p, mmap=True),
    "safetensors.numpy": safetensors.numpy.load_file,
}


def run(paths: List[str], repeat: int, with_touch: bool) -> Dict[str, List[float]]:
    times: Dict[str, List[float]] = {name: [] for name in LOADERS}
    for _ in range(repeat):
        for name, load in LOADERS.items():
            gc.collect()
            t = time.perf_counter()
            for p in paths:
                arrays = load(p)
                if with_touch:
                    touch(arrays)
                del arrays
            times[name].append(time.perf_counter() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--big-mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--tensors", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    directory = ROOT / "target" / "bench-loader"
    sets = {
        f"1 file of {args.big_mib} MiB": big_file(directory, args.big_mib),
        f"{args.files} files of {args.tensors} tensors": many_files(directory, args.files, args.tensors),
    }
    print("| set | what | loader | median s | best s | ratio to safetensors (median) |")
    print("|---|---|---|---:|---:|---:|")
    for label, paths in sets.items():
        warm(paths)
        for with_touch in (False, True):
            times = run(paths, args.repeat, with_touch)
            base = statistics.median(times["safetensors.numpy"])
            for name, ts in times.items():
                med = statistics.median(ts)
                what = "load+touch" if with_touch else "load"
                print(f"| {label} | {what} | {name} | {med:.3f} | {min(ts):.3f} | {med / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
