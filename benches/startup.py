#!/usr/bin/env python3
"""Whole-process cost of checking one small file: `stcheck FILE` against the smallest lenient
program, `read_metadata` (benches/src/bin/read_metadata.rs: read the header, parse it with the
reference crate's `SafeTensors::read_metadata`, print the tensor count).

For files of 1, 1,000 and 100,000 tensors it runs each program N times in turn (alternated
rounds, so both see the same machine) and reports the CPU time (user + system, from the
children's rusage) per process and the ratio. CPU time, not wall time: the machine is shared.

Usage: python3 benches/startup.py [ROUNDS] [RUNS_PER_ROUND]   (defaults 5, 200)
Builds both release binaries with cargo first; writes its files under target/startup/.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "target" / "startup"


def write_file(path: Path, tensors: int) -> None:
    header = {}
    for i in range(tensors):
        header[f"model.layers.{i}.weight"] = {"dtype": "F32", "shape": [2], "data_offsets": [8 * i, 8 * i + 8]}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(8 * tensors))


def cpu_of(cmd: list[str], runs: int) -> float:
    """CPU seconds per process, over `runs` runs of `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(runs):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) / runs


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "stcheck-cli", "-p", "stcheck-benches", "--bin", "stcheck", "--bin", "read_metadata"],
        cwd=ROOT,
        check=True,
    )
    stcheck = str(ROOT / "target" / "release" / "stcheck")
    baseline = str(ROOT / "target" / "release" / "read_metadata")
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"| tensors | read_metadata CPU/process | stcheck CPU/process | stcheck / read_metadata | runs |")
    print("|---|---|---|---|---|")
    for tensors in (1, 1_000, 100_000):
        path = OUT / f"t{tensors}.safetensors"
        write_file(path, tensors)
        n = runs if tensors < 100_000 else max(runs // 20, 5)
        for cmd in ([stcheck, str(path)], [baseline, str(path)]):
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)  # warm the page cache
        ours = theirs = 0.0
        for _ in range(rounds):
            theirs += cpu_of([baseline, str(path)], n)
            ours += cpu_of([stcheck, str(path)], n)
        ours, theirs = ours / rounds, theirs / rounds
        print(f"| {tensors:,} | {theirs * 1e3:.3f} ms | {ours * 1e3:.3f} ms | {ours / theirs:.2f}x | {rounds} x {n} each |")
    print(f"\nbinary sizes: stcheck {os.path.getsize(stcheck):,} bytes, read_metadata {os.path.getsize(baseline):,} bytes")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
