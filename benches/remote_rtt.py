#!/usr/bin/env python3
"""Remote checks at a real hub's round trip: files per second of `stcheck` header checks by URL
and of whole repositories (`hf://org/repo`), beside huggingface_hub's
`get_safetensors_metadata`, through a loopback proxy that adds a round-trip time (default
50 ms), with the connections and requests counted.

The network is `hub_rtt` (`benches/src/bin/hub_rtt.rs`, built in release by this script),
one process on 127.0.0.1, one thread per connection:
- a hub-like server: `/api/models/{org}/{repo}/revision/{rev}` (the commit),
  `/api/models/{org}/{repo}/tree/{commit}?recursive=true` (the listing, 1,000 entries a page
  with a `Link` header, as the hub pages), `/{org}/{repo}/resolve/{rev}/{path}` (ranges,
  `X-Repo-Commit`, `ETag`, `X-Linked-Etag`); files are generated (a real header, zeros for the
  data), so nothing large is written. With `--redirect` an LFS file's `resolve` answers 302 to
  a CDN host (another port of the proxy: another origin, with its own connections), as the hub
  redirects to its storage. With `--quota Q --window W` every answer carries the hub's
  `RateLimit` header with the requests left, and once Q requests were served in the current
  fixed window of W seconds it answers 429 with `Retry-After` and `RateLimit-Policy`.
- a delay proxy in front of it (the hub's port and the CDN's): every byte reaches the other
  side RTT/2 after it was received, and a new connection carries its first byte only after
  one more RTT (the TCP handshake; no TLS is modelled, so a real hub's new connections cost
  one or two RTTs more than here). It counts the connections to each host, the server the
  requests and their statuses.
(Until issue 34's third round the network was two asyncio processes in this script; on the
loaded 2-core machine they were slower than the programs they measured.)

Scenarios (files per second = files checked / median wall time, the fastest and slowest
round beside it: stcheck's whole process; huggingface_hub's calls only, timed inside its
process, without Python's start and imports):
- `files`: N single-file repositories, one URL each (`.../resolve/main/model.safetensors`),
  header-level check: `stcheck -q URL...` with the default `--url-jobs` and others;
  huggingface_hub's `get_safetensors_metadata(repo)` for each repository in a loop (its
  default: one repository at a time) and from a pool of 8 threads (`--hf-threads`).
- `repos`: R repositories of S shards each with an index: `stcheck -q hf://org/repo...`
  (listing, index, shards) against `get_safetensors_metadata(repo)` in a loop (it fetches
  the shards of one repository on its default thread pool).
- `ratelimit`: the `files` check against a server with a quota: the requests sent and the
  429s answered show whether the client waits or hammers.

Usage: python3 benches/remote_rtt.py [--rtt-ms 50] [--files 400] [--repos 8x50] [--rounds 3]
           [--url-jobs 8,16,32,64] [--hf-python PY] [--hf-threads 1,8] [--redirect]
           [--scenarios files,repos,ratelimit] [--bin BIN] [--baseline BIN] [--net-nice N]
       python3 benches/remote_rtt.py --help
huggingface_hub: `python3 -m venv target/hfvenv && target/hfvenv/bin/pip install huggingface_hub`
(found there by default; its cache goes to a scratch directory under target/remote_rtt/).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "target" / "remote_rtt"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import stcheck_bin  # noqa: E402

ORG = "bench"


# --- the runner -----------------------------------------------------------------------------


class Network:
    """`hub_rtt`: the hub-like server behind the delay proxy."""

    def __init__(self, exe: str, args: list[str], nice: int) -> None:
        def lower() -> None:
            # The network model should not wait for the CPU: a real network is not slowed by
            # the machine's load (a negative value needs the right to raise priority).
            try:
                os.nice(nice)
            except OSError as e:
                print(f"remote_rtt.py: hub_rtt: nice {nice}: {e}", file=sys.stderr)

        self.p = subprocess.Popen([exe, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  preexec_fn=lower if nice else None)
        self.port = int(self.p.stdout.readline())

    def stats(self) -> dict:
        self.p.stdin.write("stats\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def stop(self) -> None:
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=10)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def hub_rtt() -> str:
    """The release build of `benches/src/bin/hub_rtt.rs`."""
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "stcheck-benches", "--bin", "hub_rtt"], cwd=ROOT, check=True)
    return str(ROOT / "target" / "release" / "hub_rtt")


HF_SCRIPT = r"""
import sys, time, os
from concurrent.futures import ThreadPoolExecutor
from huggingface_hub import HfApi
api = HfApi(endpoint=sys.argv[1])
threads = int(sys.argv[2])
repos = sys.argv[3:]
n = 0
start = time.perf_counter()
def one(r):
    m = api.get_safetensors_metadata(r)
    return len(m.files_metadata)
if threads <= 1:
    for r in repos:
        n += one(r)
else:
    with ThreadPoolExecutor(threads) as ex:
        n = sum(ex.map(one, repos))
print(n, time.perf_counter() - start)
"""


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, check=False)
    took = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ...: exit {r.returncode}: {r.stderr[-2000:]}")
    return took, r.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtt-ms", type=float, default=50, help="round-trip time the proxy adds (default 50)")
    ap.add_argument("--files", type=int, default=400, help="single-file repositories of the files scenario (default 400)")
    ap.add_argument("--repos", default="8x50", help="RxS: R repositories of S shards (default 8x50)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--url-jobs", default="", help="comma-separated --url-jobs values run beside the default (e.g. 8,16,32,64)")
    ap.add_argument("--hf-python", default=str(ROOT / "target" / "hfvenv" / "bin" / "python"), help="a Python with huggingface_hub ('' to skip)")
    ap.add_argument("--hf-threads", default="1,8", help="files scenario: huggingface_hub runs, comma-separated threads (1: its default, a loop)")
    ap.add_argument("--scenarios", default="files,repos,ratelimit")
    ap.add_argument("--quota", type=int, default=100, help="requests per window of the ratelimit scenario (default 100)")
    ap.add_argument("--window", type=float, default=2.0, help="its window in seconds (default 2)")
    ap.add_argument("--net-nice", type=int, default=0, help="the niceness of hub_rtt, the server and the proxy (e.g. -10: on a loaded machine the network model is then not slowed by the load, the programs measured are; default 0)")
    ap.add_argument("--redirect", action="store_true", help="answer an LFS file's resolve URL with a 302 to a CDN host (another port), as the hub redirects to its storage")
    stcheck_bin.add_args(ap, "another stcheck binary, run with its defaults beside this one")
    a = ap.parse_args()
    for name in ("rounds", "files"):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    stcheck = stcheck_bin.stcheck(a)
    network = hub_rtt()
    hf = a.hf_python if a.hf_python and Path(a.hf_python).exists() else None
    scratch = OUT / "hf-cache"
    r, s = (int(x) for x in a.repos.split("x"))
    print(f"RTT {a.rtt_ms:g} ms (hub_rtt's loopback proxy, niceness {a.net_nice}); {a.rounds} rounds, programs alternated; median wall; load {os.getloadavg()[0]:.1f} at start")
    for scenario in a.scenarios.split(","):
        quota = a.quota if scenario == "ratelimit" else 0
        server = Network(network, ["--files", str(a.files), "--repos", a.repos, "--quota", str(quota), "--window", str(a.window),
                                   "--rtt-ms", str(a.rtt_ms), *(["--redirect"] if a.redirect else [])], a.net_nice)
        base = f"http://127.0.0.1:{server.port}"
        env = dict(os.environ, HF_ENDPOINT=base, HF_HUB_CACHE=str(scratch), HF_HUB_DISABLE_PROGRESS_BARS="1",
                   HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_IMPLICIT_TOKEN="1")
        env.pop("HF_TOKEN", None)
        if scenario in ("files", "ratelimit"):
            files = a.files
            urls = [f"{base}/{ORG}/single{i}/resolve/main/model.safetensors" for i in range(a.files)]
            repos = [f"{ORG}/single{i}" for i in range(a.files)]
            configs = [("stcheck (default)", [stcheck, "-q", *urls])]
            configs += [(f"stcheck --url-jobs {j}", [stcheck, "-q", "--url-jobs", j, *urls]) for j in a.url_jobs.split(",") if j]
            if a.baseline:
                configs.append(("baseline (default)", [a.baseline, "-q", *urls]))
            if hf and scenario == "files":
                for t in (int(x) for x in a.hf_threads.split(",") if x):
                    what = "loop" if t <= 1 else f"{t} threads"
                    configs.append((f"hf get_safetensors_metadata, {what}", [hf, "-c", HF_SCRIPT, base, str(t), *repos]))
        else:
            files = r * s
            repos = [f"{ORG}/sharded{i}" for i in range(r)]
            configs = [("stcheck (default)", [stcheck, "-q", *[f"hf://{x}" for x in repos]])]
            configs += [(f"stcheck --url-jobs {j}", [stcheck, "-q", "--url-jobs", j, *[f"hf://{x}" for x in repos]]) for j in a.url_jobs.split(",") if j]
            if a.baseline:
                configs.append(("baseline (default)", [a.baseline, "-q", *[f"hf://{x}" for x in repos]]))
            if hf:
                configs.append(("hf get_safetensors_metadata, loop", [hf, "-c", HF_SCRIPT, base, "1", *repos]))
        times: dict[str, list[float]] = {n: [] for n, _ in configs}
        counts: dict[str, tuple[str, int, dict]] = {}
        loads = []
        server.stats()
        try:
            for _ in range(a.rounds):
                for name, cmd in configs:
                    shutil.rmtree(scratch, ignore_errors=True)
                    if quota:
                        time.sleep(a.window)  # a fresh window for each program
                        server.stats()
                    loads.append(os.getloadavg()[0])
                    took, out = timed(cmd, env)
                    if name.startswith("hf"):
                        # Its own clock: the calls only, not Python's start and imports.
                        n, took = out.split()
                        if int(n) != files:
                            sys.exit(f"{name}: {n} files, expected {files}")
                        took = float(took)
                    times[name].append(took)
                    st = server.stats()
                    conns = f"{st['connections']}" + (f" + {st['cdn_connections']}" if a.redirect else "")
                    counts[name] = (conns, st["requests"], st["statuses"])
        finally:
            server.stop()
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"\n{scenario}: {files} files; load {min(loads):.1f}-{max(loads):.1f}")
        print(f"| program | wall s | spread s | files/s | ratio | connections{' (hub + CDN)' if a.redirect else ''} | requests | statuses |")
        print("|---|---|---|---|---|---|---|---|")
        first = statistics.median(times[configs[0][0]])
        for name, _ in configs:
            med = statistics.median(times[name])
            conns, reqs, statuses = counts[name]
            st = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items()))
            spread = f"{min(times[name]):.3f}-{max(times[name]):.3f}"
            print(f"| {name} | {med:.3f} | {spread} | {files / med:.0f} | {first / med:.2f}x | {conns} | {reqs} | {st} |", flush=True)


if __name__ == "__main__":
    main()
