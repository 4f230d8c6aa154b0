#!/usr/bin/env python3
"""Load on `stcheck serve` over clamd INSTREAM, beside a sink that reads and discards the same
streams (benches/src/bin/clamd_sink.rs), in the same run, in turn:

  A. 64 concurrent streams of one large valid file (default 256 MiB), one connection each,
     in 1 MiB chunks;
  B. 10,000 small files (the corpus' files, cycled) over 32 connections, each in a session
     (IDSESSION ... END).

For each server and phase: verdicts/s, MB/s (stream bytes), p50/p99 time to verdict (from the
command's first byte to the reply), and the server's peak RSS (VmHWM) after both phases.
Every reply is checked: the large file must be OK, and a small file gets the same answer each
time it is sent (the service), OK (the sink). Not a test: figures for a report, on whatever
machine runs it (say how loaded it was).

With SERVE_LOAD_CLAMD=1, Debian's clamd (`clamav-daemon`) runs the same phases too, with a
database of one signature that matches nothing here, its stream and scan limits above the
large file (it spools each stream to a file under target/serve-load/: 64 x LARGE_MIB of disk at
once).

The servers run side by side, and each round runs a phase on each of them in turn (the order
turns round by round, so neither always goes first), so a change in the machine's load (it
is shared) falls on both: with --rounds N, every round's ratio is printed, then their median
and spread (lowest-highest). Beside the wall rates, each round's CPU time per verdict of each
server (user + system, from /proc/PID/stat, 10 ms ticks): the figure that depends least on
the neighbours' load, and the ratio of the two.

With --disconnects N (1,000 in the report), a last phase on the service alone, five batches
of N clients, 64 at a time, each sending a command and the first half MiB of a stream's chunks
and then closing its socket: the service's resident memory (VmRSS) and descriptors before and
after each batch, and the cut-off and busy counts of its STATS.

SERVE_LOAD_THREADS=N adds the same service run with N runtime threads (TOKIO_WORKER_THREADS).

Usage: python3 benches/serve-load.py [LARGE_MIB] [SMALL_FILES] [--rounds N] [--disconnects N]
       [--no-large]   (defaults 256, 10000, 1 round, no disconnect phase)
Builds both release binaries with cargo first; writes its files under target/serve-load/.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "target" / "serve-load"
CHUNK = 1 << 20


def large_file(mib: int) -> bytes:
    """A valid file: one U8 tensor filling `mib` MiB (header padded to 8 bytes)."""
    n = mib << 20
    header = json.dumps({"t": {"dtype": "U8", "shape": [n], "data_offsets": [0, n]}}).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + bytes(n)


def small_files(count: int) -> list[bytes]:
    files = sorted(p for p in (ROOT / "corpus").rglob("*.safetensors") if p.is_file() and not p.is_symlink())
    blobs = [p.read_bytes() for p in files]
    return [blobs[i % len(blobs)] for i in range(count)]


def framed(data: bytes) -> list[memoryview]:
    view = memoryview(data)
    parts: list[memoryview] = []
    for at in range(0, len(data), CHUNK):
        piece = view[at : at + CHUNK]
        parts.append(memoryview(struct.pack(">I", len(piece))))
        parts.append(piece)
    parts.append(memoryview(b"\0\0\0\0"))
    return parts


def read_reply(sock: socket.socket, pending: bytearray) -> str:
    while b"\0" not in pending:
        got = sock.recv(65536)
        if not got:
            raise ConnectionError("closed before a reply")
        pending += got
    at = pending.index(b"\0")
    reply = bytes(pending[:at]).decode()
    del pending[: at + 1]
    return reply


def instream(sock: socket.socket, parts: list[memoryview]) -> None:
    sock.sendall(b"zINSTREAM\0")
    for p in parts:
        sock.sendall(p)


def run_together(threads: list[threading.Thread], go: threading.Barrier) -> float:
    """Start `threads`, release them at once (each waits on `go` when ready), and give the wall
    time until the last one ends."""
    for t in threads:
        t.start()
    go.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def phase_large(port: int, parts: list[memoryview], streams: int, size: int):
    times: list[float] = []
    replies: list[str] = []
    lock = threading.Lock()
    go = threading.Barrier(streams + 1)

    def one():
        s = socket.create_connection(("127.0.0.1", port))
        go.wait()
        t = time.perf_counter()
        instream(s, parts)
        r = read_reply(s, bytearray())
        dt = time.perf_counter() - t
        s.close()
        with lock:
            times.append(dt)
            replies.append(r)

    wall = run_together([threading.Thread(target=one) for _ in range(streams)], go)
    return wall, times, replies, streams * size


def phase_small(port: int, blobs: list[bytes], connections: int):
    times: list[float] = []
    replies: list[tuple[int, str]] = []
    lock = threading.Lock()
    go = threading.Barrier(connections + 1)

    def one(k: int):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending = bytearray()
        s.sendall(b"zIDSESSION\0")
        mine = range(k, len(blobs), connections)
        go.wait()
        local = []
        for i in mine:
            data = blobs[i]
            t = time.perf_counter()
            # An empty file is no chunk at all: a zero length ends the stream.
            chunk = struct.pack(">I", len(data)) + data if data else b""
            s.sendall(b"zINSTREAM\0" + chunk + b"\0\0\0\0")
            r = read_reply(s, pending)
            local.append((time.perf_counter() - t, i, r.split(": ", 1)[1]))
        s.sendall(b"zEND\0")
        s.close()
        with lock:
            for dt, i, r in local:
                times.append(dt)
                replies.append((i, r))

    threads = [threading.Thread(target=one, args=(k,)) for k in range(connections)]
    wall = run_together(threads, go)
    return wall, times, replies, sum(len(b) for b in blobs)


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def start(cmd: list[str], marker: str | None, log: Path, port: int = 0) -> tuple[subprocess.Popen, int]:
    """Start a server with its output to `log` (a file, not a pipe: reading a line per verdict
    would take this process's time from the clients) and wait for its listening line (or, with
    no marker, until `port` answers PING)."""
    out = open(log, "w")
    p = subprocess.Popen(cmd, stdout=out, stderr=out, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if marker is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(b"zPING\0")
                    if read_reply(s, bytearray()) == "PONG":
                        return p, port
            except OSError:
                pass
        else:
            for line in log.read_text().splitlines():
                if line.startswith(marker):
                    return p, int(line[len(marker) :].split()[0].rsplit(":", 1)[1])
        if p.poll() is not None:
            break
        time.sleep(0.2)
    raise RuntimeError(f"{cmd[0]} is not listening (see {log})")


def clamd_server(mib: int) -> tuple[list[str], int]:
    """Debian's clamd with one signature (an MD5 no file here has) and limits above the file."""
    base = OUT / "clamd"
    (base / "db").mkdir(parents=True, exist_ok=True)
    (base / "tmp").mkdir(parents=True, exist_ok=True)
    marker = b"stcheck-serve-load: no file has these bytes"
    (base / "db" / "one.hdb").write_text(f"{hashlib.md5(marker).hexdigest()}:{len(marker)}:Nothing-Here\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    limit = f"{mib + 64}M"
    (base / "clamd.conf").write_text(
        f"Foreground yes\nTCPSocket {port}\nTCPAddr 127.0.0.1\nDatabaseDirectory {base / 'db'}\n"
        f"TemporaryDirectory {base / 'tmp'}\nMaxThreads 64\nMaxQueue 256\nMaxConnectionQueueLength 256\n"
        f"StreamMaxLength {limit}\nMaxScanSize {limit}\nMaxFileSize {limit}\nReadTimeout 300\n"
    )
    return ["/usr/sbin/clamd", f"--config-file={base / 'clamd.conf'}"], port


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process `pid` so far: what a phase cost the server, whatever
    else the machine was doing (wall-clock rates on a shared machine swing with its load)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def stats(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"zSTATS\0")
        reply = read_reply(s, bytearray())
        # Until the service closed its side (its descriptor is gone).
        while s.recv(4096):
            pass
        return reply


def phase_disconnects(port: int, blob: bytes, clients: int) -> None:
    """`clients` clients, 64 at a time, each leaving in the middle of a stream."""
    # The first half MiB of the file (its header and data) in 64 KiB chunks, never the end.
    piece = 64 << 10
    half = b"".join(struct.pack(">I", len(blob[a : a + piece])) + blob[a : a + piece]
                    for a in range(0, min(len(blob), 512 << 10), piece))
    pending = list(range(clients))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                pending.pop()
            s = socket.create_connection(("127.0.0.1", port))
            try:
                s.sendall(b"zINSTREAM\0" + half)
            except OSError:
                pass  # turned away busy, and closed by the service first
            s.close()

    threads = [threading.Thread(target=worker) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main() -> None:
    argv = sys.argv[1:]
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return

    def option(name: str, default: int) -> int:
        if name in argv:
            at = argv.index(name)
            value = int(argv[at + 1])
            del argv[at : at + 2]
            return value
        return default

    rounds = option("--rounds", 1)
    disconnects = option("--disconnects", 0)
    large = "--no-large" not in argv
    argv = [a for a in argv if a != "--no-large"]
    mib = int(argv[0]) if len(argv) > 0 else 256
    count = int(argv[1]) if len(argv) > 1 else 10000
    OUT.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "stcheck-serve", "--bin", "stcheck-serve",
         "-p", "stcheck-benches", "--bin", "clamd_sink"],
        cwd=ROOT, check=True,
    )
    rel = ROOT / "target" / "release"
    big = large_file(mib)
    parts = framed(big)
    blobs = small_files(count)
    servers: dict[str, tuple[list[str], str | None, int]] = {
        "sink": ([str(rel / "clamd_sink"), "127.0.0.1:0"], "listening ", 0),
        "stcheck serve": (
            [str(rel / "stcheck-serve"), "--clamd", "127.0.0.1:0", "--workers", "64",
             "--queue", "64", "--max-connections", "256"],
            "stcheck serve: clamd on ",
            0,
        ),
    }
    if os.environ.get("SERVE_LOAD_BASE"):
        # An older build of the service, beside this one (what a change bought).
        servers["base serve"] = (
            [os.environ["SERVE_LOAD_BASE"]] + servers["stcheck serve"][0][1:],
            "stcheck serve: clamd on ",
            0,
        )
    if os.environ.get("SERVE_LOAD_THREADS"):
        # The same service with more runtime threads than cores (tokio's TOKIO_WORKER_THREADS):
        # how much of the wall rate under a loaded machine is the scheduler's share.
        n = os.environ["SERVE_LOAD_THREADS"]
        servers[f"serve {n} thr"] = (
            ["env", f"TOKIO_WORKER_THREADS={n}"] + servers["stcheck serve"][0],
            "stcheck serve: clamd on ",
            0,
        )
    if os.environ.get("SERVE_LOAD_CLAMD") == "1":
        cmd, port = clamd_server(mib)
        servers["clamd"] = (cmd, None, port)
    expected_small: dict[int, str] = {}
    print(f"load: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"A: 64 streams of {mib} MiB{'' if large else ' (not run)'}; "
          f"B: {count} small files over 32 connections; {rounds} round(s)")
    running: dict[str, tuple[subprocess.Popen, int]] = {}
    rows = []
    ratios: dict[tuple[str, str], list[float]] = {}
    cpu_used: dict[tuple[str, str], float] = {}
    # (server, phase) -> CPU seconds per verdict, one per round
    cpu_rounds: dict[tuple[str, str], list[float]] = {}
    try:
        for name, (cmd, marker, fixed) in servers.items():
            running[name] = start(cmd, marker, OUT / f"{name.replace(' ', '-')}.log", fixed)
        names = list(running)
        for r in range(rounds):
            mbs: dict[tuple[str, str], float] = {}
            # The order turns each round: no server always runs first (or right after another).
            order = names[r % len(names):] + names[: r % len(names)]
            for name in order:
                p, port = running[name]
                if large:
                    cpu = cpu_seconds(p.pid)
                    wall, times, replies, total = phase_large(port, parts, 64, len(big))
                    used = cpu_seconds(p.pid) - cpu
                    cpu_used[(name, "A")] = cpu_used.get((name, "A"), 0.0) + used
                    cpu_rounds.setdefault((name, "A"), []).append(used / 64)
                    assert all(x == "stream: OK" for x in replies), set(replies)
                    rows.append((r, name, "A", len(times) / wall, total / wall / 1e6, pct(times, 0.5), pct(times, 0.99)))
                    mbs[(name, "A")] = total / wall
                cpu = cpu_seconds(p.pid)
                wall, times, replies, total = phase_small(port, blobs, 32)
                used = cpu_seconds(p.pid) - cpu
                cpu_used[(name, "B")] = cpu_used.get((name, "B"), 0.0) + used
                cpu_rounds.setdefault((name, "B"), []).append(used / len(blobs))
                if "serve" in name:
                    for i, x in replies:
                        key = hash(blobs[i])
                        assert expected_small.setdefault(key, x) == x, (i, x)
                else:
                    # The sink and clamd find nothing in any file.
                    assert all(x == "stream: OK" for _, x in replies), {x for _, x in replies}
                rows.append((r, name, "B", len(times) / wall, total / wall / 1e6, pct(times, 0.5), pct(times, 0.99)))
                mbs[(name, "B")] = total / wall
            for phase in ("A", "B"):
                for name in running:
                    if name != "sink" and ("sink", phase) in mbs:
                        ratios.setdefault((name, phase), []).append(mbs[(name, phase)] / mbs[("sink", phase)])
            print(f"round {r + 1} ({', '.join(order)}): load average {os.getloadavg()[0]:.1f}", flush=True)
        for name, (p, _) in running.items():
            rows.append((None, name, "peak RSS MiB", peak_rss_mib(p.pid), 0, 0, 0))
        if disconnects:
            p, port = running["stcheck serve"]
            rss, fds = [rss_mib(p.pid)], [descriptors(p.pid)]
            # Five batches: memory that a batch leaves behind for good grows batch after
            # batch; the allocator's keeping of the peak does not.
            for batch in range(5):
                phase_disconnects(port, big, disconnects)
                # Until the service has closed every client's connection (its own count;
                # the STATS connection is the one left), then measured.
                deadline = time.monotonic() + 120
                while True:
                    said = dict(l.split(": ", 1) for l in stats(port).splitlines() if ": " in l)
                    if said.get("CONNECTIONS") == "1" or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                rss.append(rss_mib(p.pid))
                fds.append(descriptors(p.pid))
            gone, busy = int(said.get("CUT-OFF", "-1")), int(said.get("BUSY", "-1"))
            print(f"disconnects: 5 x {disconnects} clients left mid-stream ({gone} counted cut off, "
                  f"{busy} turned away busy); service RSS before and after each batch: "
                  f"{' '.join(f'{r:.1f}' for r in rss)} MiB; descriptors: "
                  f"{' '.join(str(f) for f in fds)}")
    finally:
        for p, _ in running.values():
            p.terminate()
            p.wait(timeout=60)
    print(f"{'round':<6} {'server':<14} {'phase':<13} {'verdicts/s':>11} {'MB/s':>9} {'p50 s':>9} {'p99 s':>9}")
    for r, name, phase, vps, mbs_, p50, p99 in rows:
        rr = "-" if r is None else str(r + 1)
        if phase == "peak RSS MiB":
            print(f"{rr:<6} {name:<14} {phase:<13} {vps:>11.1f}")
        else:
            print(f"{rr:<6} {name:<14} {phase:<13} {vps:>11.1f} {mbs_:>9.1f} {p50:>9.4f} {p99:>9.4f}")
    for (name, phase), used in sorted(cpu_used.items()):
        verdicts = rounds * (64 if phase == "A" else count)
        print(f"{name:<14} phase {phase}: CPU {used:.2f} s over {rounds} round(s), "
              f"{used / verdicts * 1e6:.1f} us per verdict")
    for phase in ("A", "B"):
        for name in running:
            if name != "sink" and ("sink", phase) in cpu_used:
                print(f"phase {phase}: {name} CPU / sink CPU = "
                      f"{cpu_used[(name, phase)] / cpu_used[('sink', phase)]:.2f}")
    for (name, phase), xs in sorted(cpu_rounds.items()):
        unit, scale = ("ms", 1e3) if phase == "A" else ("us", 1e6)
        each = " ".join(f"{x * scale:.1f}" for x in xs)
        print(f"phase {phase}: {name} CPU per verdict ({unit}), by round: {each}; "
              f"median {median(xs) * scale:.1f}, spread {min(xs) * scale:.1f}-{max(xs) * scale:.1f}")
    for phase in ("A", "B"):
        for name in running:
            base = cpu_rounds.get(("sink", phase))
            mine = cpu_rounds.get((name, phase))
            if name != "sink" and base and mine:
                xs = [m / b for m, b in zip(mine, base) if b > 0]
                if xs:
                    print(f"phase {phase}: {name} CPU per verdict / sink's, by round: "
                          f"{' '.join(f'{x:.2f}' for x in xs)}; median {median(xs):.2f}, "
                          f"spread {min(xs):.2f}-{max(xs):.2f}")
    for (name, phase), xs in ratios.items():
        if xs:
            each = " ".join(f"{x:.2f}" for x in xs)
            print(f"phase {phase}: {name} MB/s / sink MB/s, by round: {each}; "
                  f"median {median(xs):.2f}, spread {min(xs):.2f}-{max(xs):.2f}")


if __name__ == "__main__":
    main()
