#!/usr/bin/env python3
"""More workers never slower: whole-process wall time of `stcheck -q DIR` on directories of
2,000 and 20,000 small files (one F32 tensor each) with `-j 1`, `-j 2` and the default `-j`
(the cores), on a quiet machine and with every core kept busy by other processes (one busy
loop per core, as a shared CI runner or hub worker is).

Each configuration runs ROUNDS times, the configurations alternated within each round so they
see the same machine; the table gives the median wall time and its ratio to `-j 1` in the same
load. With `--baseline BIN`, another stcheck binary (an older build) runs beside it in every
round with the default `-j`, so the gain is measured in the same run too.

Usage: python3 benches/contention.py [--rounds N] [--files 2000,20000] [--baseline BIN] [--bin BIN]
       python3 benches/contention.py --help
Builds the release binary with cargo first unless --bin is given; its files go under
target/contention/. Wall time is what a gate waits for; the machine is shared, so only ratios
within one run mean anything.
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import stcheck_bin

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "target" / "contention"


def small_file() -> bytes:
    header = b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + bytes(4)


def make_dir(n: int) -> Path:
    d = OUT / f"files-{n}"
    marker = d / ".complete"
    if marker.exists():
        return d
    d.mkdir(parents=True, exist_ok=True)
    body = small_file()
    for i in range(n):
        (d / f"f{i:06}.safetensors").write_bytes(body)
    marker.write_text("")
    return d


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    took = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
    return took


class Busy:
    """One busy loop per core (`yes > /dev/null`), ended by their own process ids."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "Busy":
        for _ in range(self.n):
            self.procs.append(subprocess.Popen(["yes"], stdout=subprocess.DEVNULL))
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description="stcheck wall time with -j 1, -j 2 and the default -j, quiet and with every core busy")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--files", default="2000,20000", help="comma-separated file counts")
    stcheck_bin.add_args(ap, "another stcheck binary, run with the default -j beside it")
    a = ap.parse_args()
    stcheck = stcheck_bin.stcheck(a)
    cores = os.cpu_count() or 1
    configs = [("-j 1", [stcheck, "-j", "1"]), ("-j 2", [stcheck, "-j", "2"]), ("default", [stcheck])]
    if a.baseline:
        configs.append(("baseline default", [a.baseline]))
    print(f"{cores} cores; {a.rounds} rounds; median wall seconds (ratio to -j 1 in the same load)")
    print("| files | load | " + " | ".join(name for name, _ in configs) + " |")
    print("|---|---|" + "---|" * len(configs))
    for n in (int(x) for x in a.files.split(",")):
        d = make_dir(n)
        for load in ("quiet", f"busy x{cores}"):
            times: dict[str, list[float]] = {name: [] for name, _ in configs}
            busy = Busy(cores if load != "quiet" else 0)
            with busy:
                for _ in range(a.rounds):
                    for name, cmd in configs:
                        times[name].append(wall([*cmd, "-q", str(d)]))
            med = {name: statistics.median(t) for name, t in times.items()}
            one = med["-j 1"]
            cells = [f"{med[name]:.3f} ({med[name] / one:.2f}x)" for name, _ in configs]
            print(f"| {n} | {load} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
