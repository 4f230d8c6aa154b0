#!/usr/bin/env python3
"""Near-limit headers, whole process: `stcheck FILE` (a header check, the default read path)
against older stcheck binaries given with --baseline (round 3's, say) and the reference crate's
`read_metadata` (benches/src/bin/read_metadata.rs), on memgen's `tensors.safetensors` (the most
tensors a header holds) for each header length asked. (`read_metadata` reads the header only,
so the reference answers `MetadataIncompleteBuffer` after parsing it whole: its time is the
parse's.)

Each program runs RUNS times per round, the programs alternated within every round so they see
the same machine; the table gives the median over rounds of the wall and the CPU time (user +
system, from each child's rusage, and the two apart) per process, each program's CPU time as a ratio to
stcheck's in the same run (the median, then the lowest and highest of the per-round ratios),
the minor page faults and the peak resident memory (MB) per process, and the 1-minute load
average over the run.

With --url the stcheck programs check the file by URL (`http://127.0.0.1:PORT/...`, the
header-level check of gate/src/remote/fetch.rs: a first range, then one for the rest of the
header) from a loopback server in this process that answers single byte ranges;
`read_metadata` still reads the file.

Usage: python3 benches/header_process.py [--rounds N] [--runs N] [--lens 99999992,10000000]
           [--bin BIN] [--baseline NAME=BIN]... [--url]
       python3 benches/header_process.py --help
Builds the release binaries (stcheck unless --bin, memgen, read_metadata) with cargo first,
unless --bin is given and the helpers are built; inputs go under target/header-process/.
"""

from __future__ import annotations

import argparse
import http.server
import os
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "target" / "header-process"


def timed(cmd: list[str], runs: int) -> tuple[float, float, float, float, float]:
    """Wall, user and system seconds, minor page faults and peak resident MB per process over
    `runs` runs of `cmd` (the rusage of each child, from wait4)."""
    wall = user = system = faults = peak = 0.0
    for _ in range(runs):
        start = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        wall += time.perf_counter() - start
        err = p.stderr.read() if p.stderr else b""
        if p.stderr:
            p.stderr.close()
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            sys.exit(f"{' '.join(cmd)}: exit {code}: {err.decode(errors='replace')}")
        user += ru.ru_utime
        system += ru.ru_stime
        faults += ru.ru_minflt
        peak += ru.ru_maxrss / 1024
    return wall / runs, user / runs, system / runs, faults / runs, peak / runs


def serve(root: Path) -> int:
    """A loopback server of the files under `root` that answers single byte ranges (206 with
    Content-Range) and HEAD, on a thread of this process; its port."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: object) -> None:
            pass

        def file(self) -> Path | None:
            f = root / self.path.split("?")[0].lstrip("/")
            return f if f.resolve().is_relative_to(root.resolve()) and f.is_file() else None

        def do_HEAD(self) -> None:
            f = self.file()
            self.send_response(200 if f else 404)
            self.send_header("Content-Length", str(f.stat().st_size if f else 0))
            self.end_headers()

        def do_GET(self) -> None:
            f = self.file()
            if f is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            size = f.stat().st_size
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
            a, b = (int(m.group(1)), min(int(m.group(2) or size - 1), size - 1)) if m else (0, size - 1)
            self.send_response(206 if m else 200)
            if m:
                self.send_header("Content-Range", f"bytes {a}-{b}/{size}")
            self.send_header("Content-Length", str(b - a + 1))
            self.end_headers()
            with f.open("rb") as src:
                src.seek(a)
                left = b - a + 1
                while left:
                    chunk = src.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    left -= len(chunk)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def main() -> None:
    ap = argparse.ArgumentParser(description="near-limit header check, whole process, against older binaries and the reference")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lens", default="99999992,10000000", help="comma-separated header lengths")
    ap.add_argument("--bin", help="the stcheck binary (default: build target/release/stcheck)")
    ap.add_argument("--baseline", action="append", default=[], metavar="NAME=BIN", help="another binary run the same way (BIN may carry arguments: 'mmap=target/release/stcheck --mmap')")
    ap.add_argument("--url", action="store_true", help="stcheck programs check the file by URL from a loopback server of single ranges (read_metadata reads the file)")
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
    port = serve(OUT) if a.url else 0
    print(f"{a.rounds} rounds x {a.runs} runs{' by URL' if a.url else ''}; median per process: wall s / CPU s = user + system (CPU ratio to stcheck) / minor faults / peak MB")
    print("| header bytes | tensors | " + " | ".join(n for n, _ in programs) + " | load |")
    print("|---|---|" + "---|" * (len(programs) + 1))
    for n in (int(x) for x in a.lens.split(",")):
        d = OUT / str(n)
        f = d / "tensors.safetensors"
        if not f.exists():
            subprocess.run([str(release / "memgen"), "--", str(d), str(n)], check=True, stderr=subprocess.DEVNULL)
        said = subprocess.run([*programs[0][1], str(f)], capture_output=True, text=True).stdout
        url = f"http://127.0.0.1:{port}/{n}/tensors.safetensors"
        tensors = said.split("(", 1)[-1].split(" ", 1)[0]
        walls: dict[str, list[float]] = {name: [] for name, _ in programs}
        cpus: dict[str, list[float]] = {name: [] for name, _ in programs}
        users: dict[str, list[float]] = {name: [] for name, _ in programs}
        systems: dict[str, list[float]] = {name: [] for name, _ in programs}
        faults: dict[str, list[float]] = {name: [] for name, _ in programs}
        peaks: dict[str, list[float]] = {name: [] for name, _ in programs}
        loads = [os.getloadavg()[0]]
        for _ in range(a.rounds):
            for name, cmd in programs:
                target = url if a.url and name != "read_metadata" else str(f)
                w, u, sy, m, peak = timed([*cmd, target], a.runs)
                walls[name].append(w)
                cpus[name].append(u + sy)
                users[name].append(u)
                systems[name].append(sy)
                faults[name].append(m)
                peaks[name].append(peak)
            loads.append(os.getloadavg()[0])
        base = statistics.median(cpus["stcheck"])
        cells = []
        for name, _ in programs:
            w, c = statistics.median(walls[name]), statistics.median(cpus[name])
            ratios = sorted(x / y for x, y in zip(cpus[name], cpus["stcheck"]))
            spread = f", {ratios[0]:.2f}-{ratios[-1]:.2f}" if name != "stcheck" else ""
            u, sy = statistics.median(users[name]), statistics.median(systems[name])
            cells.append(f"{w:.3f} / {c:.3f} = {u:.3f} + {sy:.3f} ({c / base:.2f}x{spread}) / {statistics.median(faults[name]):,.0f} / {statistics.median(peaks[name]):.0f}")
        print(f"| {n:,} | {tensors} | " + " | ".join(cells) + f" | {min(loads):.1f}-{max(loads):.1f} |", flush=True)


if __name__ == "__main__":
    main()
