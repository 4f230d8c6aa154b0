"""Peak memory and wall time of loading one 1 GiB file, whole processes (issue 34).

    target/torch-venv/bin/python benches/python/load_rss.py [--rounds 3] [--keep]

(python/setup-torch-venv.sh makes that environment.) Makes target/bench-load-rss/big.safetensors
(16 F32 tensors of 64 MiB: 1 GiB; deleted at the end unless --keep), reads it once so that every
run reads from the page cache, then runs each case in a new Python process under GNU time
(`/usr/bin/time -v`), the cases alternating round by round, and prints the median peak RSS
(maximum resident set size) and wall time of each, and its peak RSS above the import floor:

- imports only: `import numpy, torch, safetensors.torch, stcheck` (the floor every case pays);
- stcheck numpy: `stcheck.load_file(path)`;
- stcheck torch: `stcheck.load_file(path, framework="pt")`;
- safetensors torch: `safetensors.torch.load_file(path)` (maps the file: its pages are the
  page cache's, counted in its RSS only as they are touched);
- safetensors torch, touched: the same, then every tensor summed (all pages touched), the
  fair comparison with a load that reads every byte.

Every case imports the same modules first, so the floor is the same for all, and ends with
`os._exit(0)`: the finalization of a process that imported torch allocates about 115 MiB more
(measured: `import numpy, torch, safetensors.torch, stcheck` peaks at 658,384 KiB with a normal
exit, 540,780 KiB with `os._exit`), and a load whose tensors are still alive then would be
charged for it. The goal of issue 34: stcheck torch's peak RSS within file size + 64 MiB of the
floor. A benchmark, not a test: it asserts nothing. Compare ratios within one run; the load
average is printed with the table.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
from typing import Dict, List, Tuple

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORK = ROOT / "target" / "bench-load-rss"

IMPORTS = "import numpy, torch, safetensors.torch, stcheck, os, sys; p = sys.argv[1]\n"
EXIT = "os._exit(0)\n"

CASES: Dict[str, str] = {
    "imports only": "",
    "stcheck numpy": "t = stcheck.load_file(p)\n",
    "stcheck torch": "t = stcheck.load_file(p, framework='pt')\n",
    "safetensors torch": "t = safetensors.torch.load_file(p)\n",
    "safetensors torch, touched": "t = safetensors.torch.load_file(p)\nsum(float(v.sum()) for v in t.values())\n",
}


def make(path: pathlib.Path) -> None:
    if path.exists():
        return
    import numpy as np
    import safetensors.numpy

    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {f"layer{i:02d}.weight": np.full(16 << 20, i, dtype=np.float32) for i in range(16)}
    safetensors.numpy.save_file(arrays, str(path))


def warm(path: pathlib.Path) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def measure(code: str, path: pathlib.Path) -> Tuple[int, float]:
    """Peak RSS (KiB) and wall time (s) of one process running `code`."""
    out = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-c", IMPORTS + code + EXIT, str(path)],
        capture_output=True, text=True, check=True,
    )
    rss = wall = None
    for line in out.stderr.splitlines():
        line = line.strip()
        if line.startswith("Maximum resident set size"):
            rss = int(line.rsplit(":", 1)[1])
        elif line.startswith("Elapsed (wall clock) time"):
            clock = line.split("): ", 1)[1]
            parts = [float(x) for x in clock.split(":")]
            wall = sum(x * 60 ** i for i, x in enumerate(reversed(parts)))
    assert rss is not None and wall is not None, out.stderr
    return rss, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help=f"keep {WORK}")
    args = ap.parse_args()
    path = WORK / "big.safetensors"
    try:
        make(path)
        warm(path)
        size = path.stat().st_size
        got: Dict[str, List[Tuple[int, float]]] = {name: [] for name in CASES}
        for r in range(args.rounds):
            for name, code in CASES.items():
                got[name].append(measure(code, path))
                print(f"  round {r + 1}: {name}: {got[name][-1][0] / 1024:.0f} MiB, {got[name][-1][1]:.2f} s", flush=True)
        load = os.getloadavg()
        floor = statistics.median(rss for rss, _ in got["imports only"])
        print()
        print(f"file: {size / 2**30:.2f} GiB; median of {args.rounds} rounds; load average "
              f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f} ({os.cpu_count()} cores)")
        print()
        print("| case | peak RSS (MiB) | above the import floor (MiB) | wall (s) |")
        print("|---|---:|---:|---:|")
        for name in CASES:
            rss = statistics.median(x for x, _ in got[name])
            wall = statistics.median(w for _, w in got[name])
            print(f"| {name} | {rss / 1024:.0f} | {(rss - floor) / 1024:.0f} | {wall:.2f} |")
        print()
        print(f"goal (issue 34): stcheck torch <= file size + 64 MiB above the floor = "
              f"{size / 2**20 + 64:.0f} MiB")
    finally:
        if not args.keep:
            shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
