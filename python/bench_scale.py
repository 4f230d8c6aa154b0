"""Scale-out measurement: the Dask scan with 1 and 2 workers beside the CLI's --jobs 1 and 2.

    target/python-venv/bin/python python/bench_scale.py [--small 20000] [--big 64] [--big-mib 16]
        [--only cli,in-process,parquet,records,deep]

The batched path (``scan_to_parquet``: batches of BATCH_SIZE targets, each written to Parquet
by its worker, only a summary sent back) is the one a hub runs; ``scan`` (records gathered on
the driver) is shown beside it. Makes two sets under target/bench-scale (kept for the next run): SMALL files of a few hundred
bytes (header checks: files/s) and BIG files of BIG_MIB MiB each (deep scan with SHA-256:
GB/s). Every file is read once first, so every run reads from the page cache. Each
configuration runs REPEAT times; the table shows the best run (the least disturbed by the
other work on a shared machine) and the median. The CLI is the release build
(target/release/stcheck, built if missing) writing its JSON Lines to /dev/null; the Dask scan
returns every record to the driver (``stcheck.dask.scan``), on a LocalCluster of worker
processes with one thread each, started (and warmed up) before the clock starts. The
"in-process" rows run the same map step (``check_partition``) in this process, without Dask:
the difference to the Dask rows is Dask's cost; "1 task" sends the whole set as one
partition, which separates the cost per task from the cost per record.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time
from typing import Callable, List, Tuple

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))

from scan_data import generate  # noqa: E402

import stcheck  # noqa: E402
import stcheck.dask  # noqa: E402


#: The groups of rows ``--only`` picks from: the CLI, the map steps in this process, the Dask
#: scan to Parquet, the Dask scan gathering records, and the deep rows of each of those.
GROUPS = ("cli", "in-process", "parquet", "records", "deep")


def cli() -> str:
    path = os.environ.get("STCHECK_CLI") or str(ROOT / "target" / "release" / "stcheck")
    if not os.path.exists(path):
        subprocess.run(["cargo", "build", "--release", "-p", "stcheck-cli"], cwd=ROOT, check=True)
    return path


def big_files(directory: pathlib.Path, count: int, mib: int) -> List[str]:
    from safetensors.numpy import save_file

    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    paths = []
    for i in range(count):
        path = directory / f"big{i:04d}.safetensors"
        if not path.exists():
            save_file({"w": rng.standard_normal(mib << 18, dtype=np.float32)}, str(path))
        paths.append(str(path))
    return paths


def warm(paths: List[str]) -> int:
    total = 0
    for p in paths:
        with open(p, "rb") as f:
            while chunk := f.read(1 << 24):
                total += len(chunk)
    return total


def timed(run: Callable[[], object], repeat: int) -> Tuple[float, float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=20000)
    ap.add_argument("--big", type=int, default=64)
    ap.add_argument("--big-mib", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--partition-size", type=int, default=250)
    ap.add_argument("--batch-size", type=int, default=10000)
    ap.add_argument("--only", default=",".join(GROUPS),
                    help="the rows to run, comma-separated: " + ", ".join(GROUPS) + " (default: all); "
                         "while iterating on one path, e.g. --only cli,parquet")
    args = ap.parse_args()
    only = set(args.only.split(","))
    if not only <= set(GROUPS):
        ap.error(f"--only: {', '.join(sorted(only - set(GROUPS)))} is not one of {', '.join(GROUPS)}")

    from distributed import Client, LocalCluster

    base = ROOT / "target" / "bench-scale"
    small_dir = base / f"small-{args.small}"
    small = sorted(str(p) for p in small_dir.glob("*.safetensors")) if small_dir.exists() else []
    if len(small) != args.small:
        small = generate(small_dir, args.small)
    big = big_files(base / f"big-{args.big_mib}mib", args.big, args.big_mib) if "deep" in only else []
    big_bytes = warm(big)
    warm(small)
    exe = cli()

    rows = []

    def cli_run(flags: List[str], paths: List[str]) -> Callable[[], object]:
        def run() -> None:
            proc = subprocess.run([exe, "--json", *flags, "--", *paths], stdout=subprocess.DEVNULL)
            assert proc.returncode in (0, 1), proc.returncode
        return run

    def row(group: str, name: str, check: str, files: List[str], nbytes: int,
            run: Callable[[], object]) -> None:
        if group in only and (check == "header" or "deep" in only):
            rows.append((name, check, len(files), nbytes, *timed(run, args.repeat)))

    for jobs in (1, 2):
        row("cli", f"CLI --jobs {jobs}", "header", small, 0, cli_run(["--jobs", str(jobs)], small))
        row("cli", f"CLI --jobs {jobs}", "deep+sha256", big, big_bytes,
            cli_run(["--jobs", str(jobs), "--sha256"], big))

    row("in-process", "in-process, 1 thread", "header", small, 0,
        lambda: stcheck.dask.check_partition(small))
    row("in-process", "in-process, 1 thread, columnar batch", "header", small, 0,
        lambda: stcheck.dask.check_batch(small))
    row("in-process", "in-process, 1 thread", "deep+sha256", big, big_bytes,
        lambda: stcheck.dask.check_partition(big, {"sha256": True}))

    for workers in (1, 2) if only & {"parquet", "records", "deep"} else ():
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address=None) as cluster, Client(cluster) as client:
            stcheck.dask.scan(small[:200], client=client, partition_size=50)  # warm-up
            size = args.partition_size
            out = base / "parquet"

            def parquet() -> None:
                shutil.rmtree(out, ignore_errors=True)
                stcheck.dask.scan_to_parquet(small, out, client=client, batch_size=args.batch_size)

            row("parquet", f"Dask {workers} worker(s), batches to Parquet", "header", small, 0, parquet)
            row("records", f"Dask {workers} worker(s)", "header", small, 0,
                lambda: stcheck.dask.scan(small, client=client, partition_size=size))
            row("records", f"Dask {workers} worker(s)", "deep+sha256", big, big_bytes,
                lambda: stcheck.dask.scan(big, client=client, partition_size=4, sha256=True))
            if workers == 1:
                # One task for the whole set: what the scan costs without per-task overhead.
                row("records", "Dask 1 worker, 1 task", "header", small, 0,
                    lambda: stcheck.dask.scan(small, client=client, partition_size=len(small)))
                row("records", "Dask 1 worker, 1 task", "deep+sha256", big, big_bytes,
                    lambda: stcheck.dask.scan(big, client=client, partition_size=len(big), sha256=True))

    print(f"load average {os.getloadavg()[0]:.1f}; stcheck {stcheck.__version__}; {os.cpu_count()} cores; small set {len(small)} files, "
          f"big set {len(big)} x {args.big_mib} MiB = {big_bytes / 1e9:.2f} GB; best (median) of {args.repeat}")
    print()
    print("| runner | check | files | files/s | GB/s |")
    print("|---|---|---|---|---|")
    for name, check, n, nbytes, best, median in rows:
        fps = f"{n / best:,.0f} ({n / median:,.0f})"
        gbs = f"{nbytes / best / 1e9:.2f} ({nbytes / median / 1e9:.2f})" if nbytes else "-"
        print(f"| {name} | {check} | {n} | {fps} | {gbs} |")


if __name__ == "__main__":
    main()
