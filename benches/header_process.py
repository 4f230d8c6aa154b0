#!/usr/bin/env python3
"""Near-limit headers, whole process: `stcheck FILE` (a header check, the default read path)
against older stcheck binaries given with --baseline (round 3's, say) and the reference crate's
`read_metadata` (benches/src/bin/read_metadata.rs), on memgen's `tensors.safetensors` (the most
tensors a header holds) for each header length asked. (`read_metadata` reads the header only,
so the reference answers `MetadataIncompleteBuffer` after parsing it whole: its time is the
parse's.)

Each program runs RUNS times per round, the programs alternated within every round so they see
the same machine; the table gives the median over rounds of the wall and the CPU time (user +
system, from the children's rusage) per process, each program's CPU time as a ratio to
stcheck's in the same run (the median, then the lowest and highest of the per-round ratios),
the minor page faults per process, and the 1-minute load average over the run.

Usage: python3 benches/header_process.py [--rounds N] [--runs N] [--lens 99999992,10000000]
           [--bin BIN] [--baseline NAME=BIN]...
       python3 benches/header_process.py --help
Builds the release binaries (stcheck unless --bin, memgen, read_metadata) with cargo first,
unless --bin is given and the helpers are built; inputs go under target/header-process/.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "target" / "header-process"


def timed(cmd: list[str], runs: int) -> tuple[float, float, float]:
    """Wall and CPU seconds and minor page faults per process over `runs` runs of `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    for _ in range(runs):
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        if r.returncode not in (0, 1):
            sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    faults = after.ru_minflt - before.ru_minflt
    return wall / runs, cpu / runs, faults / runs


def main() -> None:
    ap = argparse.ArgumentParser(description="near-limit header check, whole process, against older binaries and the reference")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lens", default="99999992,10000000", help="comma-separated header lengths")
    ap.add_argument("--bin", help="the stcheck binary (default: build target/release/stcheck)")
    ap.add_argument("--baseline", action="append", default=[], metavar="NAME=BIN", help="another binary run the same way (BIN may carry arguments: 'mmap=target/release/stcheck --mmap')")
    a = ap.parse_args()
    release = ROOT / "target" / "release"
    helpers = [release / "memgen", release / "read_metadata"]
    # With --bin and the helpers built, nothing is built (a build would load the machine).
    if not a.bin or not all(h.exists() for h in helpers):
        build = ["cargo", "build", "--release", "-q", "-p", "stcheck-benches", "--bin", "memgen", "--bin", "read_metadata"]
        if not a.bin:
            build += ["-p", "stcheck-cli", "--bin", "stcheck"]
        subprocess.run(build, cwd=ROOT, check=True)
    programs = [("stcheck", [a.bin or str(release / "stcheck")])]
    for b in a.baseline:
        name, _, path = b.partition("=")
        if not path:
            sys.exit(f"--baseline {b}: expected NAME=BIN")
        programs.append((name, shlex.split(path)))
    programs.append(("read_metadata", [str(release / "read_metadata")]))
    print(f"{a.rounds} rounds x {a.runs} runs; median per process: wall s / CPU s (CPU ratio to stcheck) / minor faults")
    print("| header bytes | tensors | " + " | ".join(n for n, _ in programs) + " | load |")
    print("|---|---|" + "---|" * (len(programs) + 1))
    for n in (int(x) for x in a.lens.split(",")):
        d = OUT / str(n)
        f = d / "tensors.safetensors"
        if not f.exists():
            subprocess.run([str(release / "memgen"), "--", str(d), str(n)], check=True, stderr=subprocess.DEVNULL)
        said = subprocess.run([*programs[0][1], str(f)], capture_output=True, text=True).stdout
        tensors = said.split("(", 1)[-1].split(" ", 1)[0]
        walls: dict[str, list[float]] = {name: [] for name, _ in programs}
        cpus: dict[str, list[float]] = {name: [] for name, _ in programs}
        faults: dict[str, list[float]] = {name: [] for name, _ in programs}
        loads = [os.getloadavg()[0]]
        for _ in range(a.rounds):
            for name, cmd in programs:
                w, c, m = timed([*cmd, str(f)], a.runs)
                walls[name].append(w)
                cpus[name].append(c)
                faults[name].append(m)
            loads.append(os.getloadavg()[0])
        base = statistics.median(cpus["stcheck"])
        cells = []
        for name, _ in programs:
            w, c = statistics.median(walls[name]), statistics.median(cpus[name])
            ratios = sorted(x / y for x, y in zip(cpus[name], cpus["stcheck"]))
            spread = f", {ratios[0]:.2f}-{ratios[-1]:.2f}" if name != "stcheck" else ""
            cells.append(f"{w:.3f} / {c:.3f} ({c / base:.2f}x{spread}) / {statistics.median(faults[name]):,.0f}")
        print(f"| {n:,} | {tensors} | " + " | ".join(cells) + f" | {min(loads):.1f}-{max(loads):.1f} |", flush=True)


if __name__ == "__main__":
    main()
