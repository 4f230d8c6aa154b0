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

Usage: python3 benches/serve-load.py [LARGE_MIB] [SMALL_FILES]   (defaults 256, 10000)
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


def main() -> None:
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        return
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
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
    if os.environ.get("SERVE_LOAD_CLAMD") == "1":
        cmd, port = clamd_server(mib)
        servers["clamd"] = (cmd, None, port)
    expected_small: dict[int, str] = {}
    print(f"load: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"A: 64 streams of {mib} MiB; B: {count} small files over 32 connections")
    rows = []
    for name, (cmd, marker, fixed) in servers.items():
        p, port = start(cmd, marker, OUT / f"{name.replace(' ', '-')}.log", fixed)
        try:
            wall, times, replies, total = phase_large(port, parts, 64, len(big))
            assert all(r == "stream: OK" for r in replies), set(replies)
            rows.append((name, "A", len(times) / wall, total / wall / 1e6, pct(times, 0.5), pct(times, 0.99)))
            wall, times, replies, total = phase_small(port, blobs, 32)
            if name == "stcheck serve":
                for i, r in replies:
                    key = hash(blobs[i])
                    assert expected_small.setdefault(key, r) == r, (i, r)
            else:
                # The sink and clamd find nothing in any file.
                assert all(r == "stream: OK" for _, r in replies), {r for _, r in replies}
            rows.append((name, "B", len(times) / wall, total / wall / 1e6, pct(times, 0.5), pct(times, 0.99)))
            rss = peak_rss_mib(p.pid)
            rows.append((name, "peak RSS MiB", rss, 0, 0, 0))
        finally:
            p.terminate()
            p.wait(timeout=60)
    print(f"{'server':<14} {'phase':<13} {'verdicts/s':>11} {'MB/s':>9} {'p50 s':>9} {'p99 s':>9}")
    for name, phase, vps, mbs, p50, p99 in rows:
        if phase == "peak RSS MiB":
            print(f"{name:<14} {phase:<13} {vps:>11.1f}")
        else:
            print(f"{name:<14} {phase:<13} {vps:>11.1f} {mbs:>9.1f} {p50:>9.4f} {p99:>9.4f}")
    by = {(r[0], r[1]): r for r in rows}
    for phase in ("A", "B"):
        ratio = by[("stcheck serve", phase)][3] / by[("sink", phase)][3]
        print(f"phase {phase}: stcheck serve MB/s / sink MB/s = {ratio:.2f}")


if __name__ == "__main__":
    main()
