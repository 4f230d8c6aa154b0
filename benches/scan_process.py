#!/usr/bin/env python3
"""The deep scan of a 1 GiB F32 file, whole process, warm and cold, and what it leaves in the
page cache.

- warm (the file in the page cache): `stcheck --deep` (read, the default), `--deep --mmap`,
  `--deep --sha256`, against `dd bs=256K` to /dev/null (the copy out of the page cache alone)
  and `openssl dgst -sha256`;
- cold (the file's pages dropped first with posix_fadvise(DONTNEED), no root needed):
  `stcheck --deep` and `--deep --mmap`, with the growth of the page cache (`Cached` in
  /proc/meminfo) over each run.

Each command runs ROUNDS times, alternated within every round; the table gives the median
wall time with its spread (fastest-slowest) and its ratio to the first command of its group,
and the median CPU time (user + system of the process and its threads) with its ratio: on a
shared machine the CPU time is the steadier figure, as the wall time also counts the waits
for a core. The load average is printed before and after each group. With --baseline BIN an older
stcheck runs the same stcheck commands beside it. The machine is shared: the cache growth of a
run also counts what other processes read meanwhile (several rounds show it).

Usage: python3 benches/scan_process.py [--rounds N] [--groups warm,sha256,cold] [--bin BIN] [--baseline BIN]
Builds the release binary unless --bin is given; the file goes to target/scan-process/.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import stcheck_bin

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "target" / "scan-process"
GIB = 1 << 30


def make_file() -> Path:
    path = OUT / "f32-1gib.safetensors"
    if path.exists():
        return path
    OUT.mkdir(parents=True, exist_ok=True)
    tensors = 16
    each = GIB // tensors
    header = {}
    parts = []
    for i in range(tensors):
        parts.append(f'"t{i:02}":{{"dtype":"F32","shape":[{each // 4}],"data_offsets":[{i * each},{(i + 1) * each}]}}')
    text = ("{" + ",".join(parts) + "}").encode()
    text += b" " * (-len(text) % 8)
    del header
    block = bytes(range(64)) * (1 << 14)  # 1 MiB of small finite floats
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _ in range(GIB // len(block)):
            f.write(block)
    return path


def cached_kib() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Cached:"):
                return int(line.split()[1])
    return 0


def drop(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm(path: Path) -> None:
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)


def cpu_children() -> float:
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def run(cmd: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and the page cache's growth in KiB over one run of `cmd`."""
    before = cached_kib()
    cpu = cpu_children()
    start = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    took = time.perf_counter() - start
    used = cpu_children() - cpu
    grew = cached_kib() - before
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
    return took, used, grew


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description="1 GiB deep scan, warm and cold, whole process")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--groups", default="warm,sha256,cold", help="comma-separated groups to run (default: all three)")
    stcheck_bin.add_args(ap, "an older stcheck binary, run beside it")
    a = ap.parse_args()
    st = stcheck_bin.stcheck(a)
    f = make_file()
    p = str(f)
    bins = [("stcheck", st)] + ([("baseline", a.baseline)] if a.baseline else [])
    warm_cmds = [("dd bs=256K (copy floor)", ["dd", f"if={p}", "of=/dev/null", "bs=256K"])]
    for name, b in bins:
        warm_cmds += [
            (f"{name} --deep", [b, "--deep", p]),
            (f"{name} --deep --mmap", [b, "--deep", "--mmap", p]),
        ]
    sha_cmds = [("openssl dgst -sha256", ["openssl", "dgst", "-sha256", p])]
    for name, b in bins:
        sha_cmds.append((f"{name} --deep --sha256", [b, "--deep", "--sha256", p]))
    cold_cmds = []
    for name, b in bins:
        cold_cmds += [
            (f"{name} --deep (cold)", [b, "--deep", p]),
            (f"{name} --deep --mmap (cold)", [b, "--deep", "--mmap", p]),
        ]
    print(f"{a.rounds} rounds; median wall s [fastest-slowest] (ratio to the group's first); median CPU s (ratio); page cache growth MiB (median)")
    print("| group | command | wall s | ratio | CPU s | ratio | cache growth MiB |")
    print("|---|---|---|---|---|---|---|")
    wanted = a.groups.split(",")
    groups = (("warm", warm_cmds, False), ("warm sha256", sha_cmds, False), ("cold", cold_cmds, True))
    for group, cmds, cold in (g for g in groups if g[0].split()[-1] in wanted):
        times: dict[str, list[float]] = {n: [] for n, _ in cmds}
        cpus: dict[str, list[float]] = {n: [] for n, _ in cmds}
        grows: dict[str, list[int]] = {n: [] for n, _ in cmds}
        loads = [load()]
        for _ in range(a.rounds):
            for name, cmd in cmds:
                if cold:
                    drop(f)
                else:
                    warm(f)
                t, c, g = run(cmd)
                times[name].append(t)
                cpus[name].append(c)
                grows[name].append(g)
        loads.append(load())
        first = statistics.median(times[cmds[0][0]])
        first_cpu = statistics.median(cpus[cmds[0][0]])
        for name, _ in cmds:
            t = statistics.median(times[name])
            spread = f"{min(times[name]):.3f}-{max(times[name]):.3f}"
            c = statistics.median(cpus[name])
            g = statistics.median(grows[name]) / 1024
            print(
                f"| {group} | {name} | {t:.3f} [{spread}] | {t / first:.2f}x | {c:.3f} | {c / first_cpu:.2f}x | {g:.0f} |",
                flush=True,
            )
        print(f"(load average before and after the group: {loads[0]}; {loads[1]})", flush=True)


if __name__ == "__main__":
    main()
