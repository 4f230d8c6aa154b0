#!/usr/bin/env python3
"""Remote checks at a real hub's round trip: files per second of `stcheck` header checks by URL
and of whole repositories (`hf://org/repo`), beside huggingface_hub's
`get_safetensors_metadata`, through a loopback proxy that adds a round-trip time (default
50 ms), with the connections and requests counted.

Three processes on 127.0.0.1:
- a hub-like server (`serve`): `/api/models/{org}/{repo}/revision/{rev}` (the commit),
  `/api/models/{org}/{repo}/tree/{commit}?recursive=true` (the listing, 1,000 entries a page
  with a `Link` header, as the hub pages), `/{org}/{repo}/resolve/{rev}/{path}` (ranges,
  `X-Repo-Commit`, `ETag`, `X-Linked-Etag`); files are generated (a real header, zeros for the
  data), so nothing large is written. With `--quota Q --window W` it answers 429 with
  `Retry-After` and the hub's `RateLimit`/`RateLimit-Policy` headers once Q requests were
  served in the current fixed window of W seconds.
- a delay proxy (`proxy`): every byte reaches the other side RTT/2 after it was received, and a
  new connection carries its first byte only after one more RTT (the TCP handshake; no TLS is
  modelled, so a real hub's new connections cost one or two RTTs more than here). On a loaded
  machine the two Python processes of the network model wait for the CPU too, which adds to
  every round trip: `--net-nice -10` runs them ahead of the load (the programs measured are
  not favoured).
- this runner, which alternates the programs round by round and asks both for their counts.

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
           [--scenarios files,repos,ratelimit] [--bin BIN] [--baseline BIN]
       python3 benches/remote_rtt.py --help
huggingface_hub: `python3 -m venv target/hfvenv && target/hfvenv/bin/pip install huggingface_hub`
(found there by default; its cache goes to a scratch directory under target/remote_rtt/).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "target" / "remote_rtt"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import stcheck_bin  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"
ORG = "bench"
TENSORS = 8
SHAPE = (256, 256)


# --- files ----------------------------------------------------------------------------------


def header_of(names: list[str]) -> tuple[bytes, int]:
    """The length field and header of F32 tensors `names` of SHAPE, and the data's length."""
    each = SHAPE[0] * SHAPE[1] * 4
    h = {n: {"dtype": "F32", "shape": list(SHAPE), "data_offsets": [i * each, (i + 1) * each]} for i, n in enumerate(names)}
    text = json.dumps(h, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, each * len(names)


class File:
    """A file served from its head and a length: bytes past the head are zeros."""

    def __init__(self, names: list[str]) -> None:
        self.head, data = header_of(names)
        self.size = len(self.head) + data
        self.names = names
        self.etag = hashlib.sha256(self.head).hexdigest()

    def read(self, a: int, b: int) -> bytes:
        """Bytes a..=b."""
        out = self.head[a : b + 1]
        return out + bytes(b + 1 - a - len(out))


class Repo:
    def __init__(self, files: dict[str, File | bytes]) -> None:
        self.files = files


def single_repo() -> Repo:
    return Repo({"model.safetensors": File([f"w{j}" for j in range(TENSORS)]), "config.json": b"{}"})


def sharded_repo(shards: int) -> Repo:
    files: dict[str, File | bytes] = {"config.json": b"{}"}
    weight_map = {}
    total = 0
    for i in range(shards):
        name = f"model-{i + 1:05}-of-{shards:05}.safetensors"
        f = File([f"layers.{i}.w{j}" for j in range(TENSORS)])
        files[name] = f
        for n in f.names:
            weight_map[n] = name
        total += f.size - len(f.head)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    return Repo(files)


# --- the hub-like server --------------------------------------------------------------------


class Hub:
    def __init__(self, repos: dict[str, Repo], quota: int, window: float, redirect: bool) -> None:
        self.repos = repos
        self.redirect = redirect
        self.quota, self.window = quota, window
        self.requests = 0
        self.statuses: dict[int, int] = {}
        self.window_start = time.monotonic()
        self.in_window = 0

    def route(self, method: str, target: str, headers: dict[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
        path, _, query = target.partition("?")
        parts = [p for p in path.split("/") if p]
        if self.quota:
            now = time.monotonic()
            if now - self.window_start >= self.window:
                self.window_start, self.in_window = now, 0
            left = self.window - (now - self.window_start)
            if self.in_window >= self.quota:
                t = max(1, int(left + 0.999))
                return 429, [("Retry-After", str(t)), ("RateLimit", f'"resolvers";r=0;t={t}'),
                             ("RateLimit-Policy", f'"fixed window";"resolvers";q={self.quota};w={int(self.window)}')], b"Too Many Requests"
            self.in_window += 1
        if parts[:2] == ["api", "models"] and len(parts) >= 5:
            repo = self.repos.get(f"{parts[2]}/{parts[3]}")
            if repo is None:
                return 404, [("X-Error-Code", "RepoNotFound")], b"{}"
            if parts[4] == "revision":
                return 200, [("Content-Type", "application/json")], json.dumps({"sha": COMMIT, "id": f"{parts[2]}/{parts[3]}"}).encode()
            if parts[4] == "tree":
                names = sorted(repo.files)
                start = 0
                for kv in query.split("&"):
                    if kv.startswith("cursor="):
                        start = int(kv[7:])
                page = names[start : start + 1000]
                entries = []
                for n in page:
                    f = repo.files[n]
                    if isinstance(f, File):
                        entries.append({"type": "file", "path": n, "size": f.size, "oid": f.etag[:40],
                                        "lfs": {"oid": f.etag, "size": f.size, "pointerSize": 134}})
                    else:
                        entries.append({"type": "file", "path": n, "size": len(f), "oid": hashlib.sha1(f).hexdigest()})
                extra = []
                if start + 1000 < len(names):
                    nxt = f"http://{headers.get('host', '')}/api/models/{parts[2]}/{parts[3]}/tree/{parts[5]}?recursive=true&cursor={start + 1000}"
                    extra.append(("Link", f'<{nxt}>; rel="next"'))
                return 200, [("Content-Type", "application/json"), *extra], json.dumps(entries).encode()
        cdn = parts[:1] == ["cdn"]
        if cdn:
            parts = [*parts[1:3], "resolve", COMMIT, *parts[3:]]
        if len(parts) >= 5 and parts[2] == "resolve":
            repo = self.repos.get(f"{parts[0]}/{parts[1]}")
            name = "/".join(parts[4:])
            f = repo.files.get(name) if repo else None
            if f is None:
                return 404, [("X-Error-Code", "EntryNotFound"), ("X-Repo-Commit", COMMIT)], b"Entry not found"
            if self.redirect and isinstance(f, File) and not cdn:
                # As the hub answers an LFS file: a redirect to its storage, with what it says
                # of the file (here on the same host, so the connection can be reused).
                where = f"/cdn/{parts[0]}/{parts[1]}/{name}"
                return 302, [("Location", where), ("X-Repo-Commit", COMMIT), ("X-Linked-Etag", f'"{f.etag}"'),
                             ("X-Linked-Size", str(f.size))], f"Found. Redirecting to {where}".encode()
            common = [] if cdn else [("X-Repo-Commit", COMMIT)]
            common += [("Accept-Ranges", "bytes")]
            if isinstance(f, File):
                common += [("ETag", f'"{f.etag}"')]
                if not cdn:
                    common += [("X-Linked-Etag", f'"{f.etag}"'), ("X-Linked-Size", str(f.size))]
                size, read = f.size, f.read
            else:
                data = f
                common += [("ETag", f'"{hashlib.sha1(data).hexdigest()}"')]
                size, read = len(data), (lambda a, b, d=data: d[a : b + 1])
            rng = headers.get("range", "")
            if rng.startswith("bytes="):
                a_s, _, b_s = rng[6:].partition("-")
                a = int(a_s) if a_s else 0
                b = min(int(b_s), size - 1) if b_s else size - 1
                if a >= size:
                    return 416, [*common, ("Content-Range", f"bytes */{size}")], b""
                body = read(a, b) if method != "HEAD" else b""
                return 206, [*common, ("Content-Range", f"bytes {a}-{b}/{size}"), ("X-Length", str(b - a + 1))], body
            if method == "HEAD":
                return 200, [*common, ("X-Length", str(size))], b""
            return 200, common, read(0, size - 1)
        return 404, [], b"not found"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                if int(headers.get("content-length", "0") or 0):
                    await reader.readexactly(int(headers["content-length"]))
                status, hdrs, body = self.route(method, target, headers)
                self.requests += 1
                self.statuses[status] = self.statuses.get(status, 0) + 1
                length = next((v for k, v in hdrs if k == "X-Length"), None) or str(len(body))
                hdrs = [(k, v) for k, v in hdrs if k != "X-Length"]
                if method == "HEAD":
                    body = b""
                out = [f"HTTP/1.1 {status} X", f"Content-Length: {length}"]
                out += [f"{k}: {v}" for k, v in hdrs]
                writer.write(("\r\n".join(out) + "\r\n\r\n").encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()


# --- the delay proxy ------------------------------------------------------------------------


class Proxy:
    def __init__(self, upstream: int, rtt: float) -> None:
        self.upstream, self.rtt = upstream, rtt
        self.connections = 0
        # The loop holds its tasks weakly: the live ones are held here.
        self.live: set[asyncio.Task] = set()

    def hold(self, task: asyncio.Task) -> asyncio.Task:
        self.live.add(task)
        task.add_done_callback(self.live.discard)
        return task

    async def pump(self, r: asyncio.StreamReader, w: asyncio.StreamWriter, first_delay: float) -> None:
        loop = asyncio.get_running_loop()
        q: asyncio.Queue = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await q.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if w.can_write_eof():
                        w.write_eof()
                    return
                w.write(data)
                await w.drain()

        sender = self.hold(asyncio.create_task(send()))
        extra = first_delay
        try:
            while True:
                data = await r.read(1 << 16)
                q.put_nowait((loop.time() + self.rtt / 2 + extra, data))
                extra = 0.0
                if not data:
                    break
        except ConnectionError:
            q.put_nowait((loop.time(), b""))
        try:
            await sender
        except ConnectionError:
            pass

    async def handle(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        self.connections += 1
        me = asyncio.current_task()
        if me is not None:
            self.hold(me)
        try:
            sr, sw = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            cw.close()
            return
        # The handshake's round trip: the client's first byte arrives one RTT later.
        await asyncio.gather(self.pump(cr, sw, self.rtt), self.pump(sr, cw, 0.0), return_exceptions=True)
        sw.close()
        cw.close()


async def run_child(kind: str, a: argparse.Namespace) -> None:
    if a.nice:
        # The network model should not wait for the CPU: a real network is not slowed by the
        # machine's load (a negative value needs the right to raise priority).
        try:
            os.nice(a.nice)
        except OSError as e:
            print(f"remote_rtt.py {kind}: nice {a.nice}: {e}", file=sys.stderr)
    if kind == "serve":
        repos = make_repos(a.files, a.repos)
        obj = Hub(repos, a.quota, a.window, a.redirect)
        server = await asyncio.start_server(obj.serve, "127.0.0.1", 0, backlog=1024)
    else:
        obj = Proxy(a.upstream, a.rtt_ms / 1000)
        server = await asyncio.start_server(obj.handle, "127.0.0.1", 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = (await reader.readline()).decode().strip()
        if not line or line == "quit":
            sys.stdout.flush()
            os._exit(0)
        if line == "stats":
            if isinstance(obj, Hub):
                print(json.dumps({"requests": obj.requests, "statuses": obj.statuses}), flush=True)
                obj.requests, obj.statuses = 0, {}
            else:
                print(json.dumps({"connections": obj.connections}), flush=True)
                obj.connections = 0


def make_repos(files: int, repos: str) -> dict[str, Repo]:
    out: dict[str, Repo] = {}
    for i in range(files):
        out[f"{ORG}/single{i}"] = single_repo()
    r, s = (int(x) for x in repos.split("x"))
    for i in range(r):
        out[f"{ORG}/sharded{i}"] = sharded_repo(s)
    return out


# --- the runner -----------------------------------------------------------------------------


class Child:
    def __init__(self, args: list[str]) -> None:
        self.p = subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
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
    if len(sys.argv) > 1 and sys.argv[1] in ("serve", "proxy"):
        kind = sys.argv[1]
        ap = argparse.ArgumentParser(prog=f"remote_rtt.py {kind}")
        ap.add_argument("--files", type=int, default=0)
        ap.add_argument("--repos", default="0x0")
        ap.add_argument("--quota", type=int, default=0)
        ap.add_argument("--window", type=float, default=1.0)
        ap.add_argument("--upstream", type=int, default=0)
        ap.add_argument("--redirect", action="store_true")
        ap.add_argument("--rtt-ms", type=float, default=50)
        ap.add_argument("--nice", type=int, default=0)
        asyncio.run(run_child(kind, ap.parse_args(sys.argv[2:])))
        return
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
    ap.add_argument("--net-nice", type=int, default=0, help="the niceness of the server and the proxy (e.g. -10: on a loaded machine the network model is then not slowed by the load, the programs measured are; default 0)")
    ap.add_argument("--redirect", action="store_true", help="answer an LFS file's resolve URL with a 302 to /cdn/... on the same host, as the hub redirects to its storage")
    stcheck_bin.add_args(ap, "another stcheck binary, run with its defaults beside this one")
    a = ap.parse_args()
    for name in ("rounds", "files"):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    stcheck = stcheck_bin.stcheck(a)
    hf = a.hf_python if a.hf_python and Path(a.hf_python).exists() else None
    scratch = OUT / "hf-cache"
    r, s = (int(x) for x in a.repos.split("x"))
    print(f"RTT {a.rtt_ms:g} ms (loopback proxy, niceness {a.net_nice}); {a.rounds} rounds, programs alternated; median wall; load {os.getloadavg()[0]:.1f} at start")
    for scenario in a.scenarios.split(","):
        quota = a.quota if scenario == "ratelimit" else 0
        server = Child(["serve", "--files", str(a.files), "--repos", a.repos, "--quota", str(quota), "--window", str(a.window),
                        "--nice", str(a.net_nice), *(["--redirect"] if a.redirect else [])])
        proxy = Child(["proxy", "--upstream", str(server.port), "--rtt-ms", str(a.rtt_ms), "--nice", str(a.net_nice)])
        base = f"http://127.0.0.1:{proxy.port}"
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
        counts: dict[str, tuple[int, int, dict]] = {}
        loads = []
        server.stats()
        proxy.stats()
        try:
            for _ in range(a.rounds):
                for name, cmd in configs:
                    shutil.rmtree(scratch, ignore_errors=True)
                    if quota:
                        time.sleep(a.window)  # a fresh window for each program
                        server.stats()
                        proxy.stats()
                    loads.append(os.getloadavg()[0])
                    took, out = timed(cmd, env)
                    if name.startswith("hf"):
                        # Its own clock: the calls only, not Python's start and imports.
                        n, took = out.split()
                        if int(n) != files:
                            sys.exit(f"{name}: {n} files, expected {files}")
                        took = float(took)
                    times[name].append(took)
                    st, px = server.stats(), proxy.stats()
                    counts[name] = (px["connections"], st["requests"], st["statuses"])
        finally:
            server.stop()
            proxy.stop()
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"\n{scenario}: {files} files; load {min(loads):.1f}-{max(loads):.1f}")
        print("| program | wall s | spread s | files/s | ratio | connections | requests | statuses |")
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
