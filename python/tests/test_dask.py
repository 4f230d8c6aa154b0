"""The Dask scan on a LocalCluster with 2 worker processes gives the CLI's records."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
from typing import Any, Dict, List

import pytest

import stcheck
import stcheck.dask

from conftest import CASES, run_cli
from scan_data import generate

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster_client() -> Any:
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> List[str]:
    root = tmp_path_factory.mktemp("scan")
    paths = generate(root / "files", 3000)
    # A sharded set, a missing file and a FIFO: every kind of record.
    index = next(c["file"] for c in CASES if c["kind"] == "index" and "valid/" in c["id"])
    shutil.copytree(pathlib.Path(index).parent, root / "sharded")
    paths.append(str(root / "sharded" / pathlib.Path(index).name))
    paths.append(str(root / "missing.safetensors"))
    os.mkfifo(root / "pipe.safetensors")
    paths.append(str(root / "pipe.safetensors"))
    return paths


@pytest.mark.parametrize("flags,opts", [([], {}), (["--sha256"], {"sha256": True})], ids=["header", "deep"])
def test_scan_records_equal_the_cli(cluster_client: Any, targets: List[str], flags: List[str], opts: Dict[str, Any]) -> None:
    want, want_summary = run_cli(["--jobs", "2", *flags], targets)
    scan = stcheck.dask.scan(targets, client=cluster_client, partition_size=200, **opts)
    assert len(scan.records) == len(targets) == len(want)
    assert scan.records == want
    assert scan.summary == want_summary
    kinds = {r["type"] for r in scan.records}
    assert kinds == {"file", "index", "not_checked"}
    assert {r["data"]["status"] for r in scan.records if r["type"] == "file"} == {"valid", "invalid", "io_error"}


def test_scan_keeping_failures_only(cluster_client: Any, targets: List[str]) -> None:
    want, want_summary = run_cli([], targets)
    scan = stcheck.dask.scan(targets, client=cluster_client, partition_size=500, keep="failures")
    assert scan.summary == want_summary
    assert scan.records == [r for r in want if r["type"] == "not_checked" or r["data"]["status"] != "valid"]


def test_jsonl_and_the_bag(cluster_client: Any, targets: List[str], tmp_path: pathlib.Path) -> None:
    import io
    import json

    want, want_summary = run_cli([], targets[:300])
    scan = stcheck.dask.scan(targets[:300], client=cluster_client, partition_size=64)
    out = io.StringIO()
    scan.write_jsonl(out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines == want + [{"type": "summary", "data": want_summary}]
    bag = stcheck.dask.records_bag(targets[:300], partition_size=64)
    assert bag.compute(scheduler=cluster_client) == want


def test_partition_step_needs_no_dask(targets: List[str]) -> None:
    """The map step is a plain function: what Ray or Spark would run (docs/python.md)."""
    records, summary = stcheck.dask.check_partition(targets[:50], {"deep": True})
    assert records == [stcheck.record(t, deep=True) for t in targets[:50]]
    assert summary == stcheck.dask.summarize(records)
    halves = [stcheck.dask.check_partition(targets[i:i + 25])[1] for i in (0, 25)]
    assert stcheck.dask.merge_summaries(halves) == stcheck.dask.summarize(
        stcheck.dask.check_partition(targets[:50])[0]
    )


def test_urls_go_through_the_remote_hook() -> None:
    """A URL is never valid unless checked: nothing listens on port 9 of 127.0.0.1."""
    rec = stcheck.record("http://127.0.0.1:9/model.safetensors")
    assert rec["type"] == "file" and rec["data"]["status"] == "io_error"
    if not stcheck._native.remote:
        assert rec["data"]["read_error"] == "unsupported"
    assert stcheck.dask.summarize([rec])["exit_code"] == 2


def test_records_of_mixed_targets(targets: List[str]) -> None:
    """Paths go to one native call, bytes and URLs one by one; the order is kept."""
    data = pathlib.Path(targets[0]).read_bytes()
    mixed: List[Any] = [targets[1], data, "http://127.0.0.1:9/x.safetensors", targets[-3], targets[2]]
    assert stcheck.records(mixed, sha256=True) == [stcheck.record(t, sha256=True) for t in mixed]


def _row(target: Any, rec: Dict[str, Any], line: str) -> Dict[str, Any]:
    """The oracle of a Parquet row: what each column holds, read from the parsed record (how
    ``check_batch`` made its rows before they were made natively)."""
    data = rec["data"]
    error = data.get("error") or (data.get("errors") or [None])[0] or {}
    status = data.get("status", "not_checked" if rec["type"] == "not_checked" else None)
    message = error.get("message") or data.get("message") or data.get("io_error")
    return {
        "target": str(target),
        "type": rec["type"],
        "path": data.get("path"),
        "status": status,
        "rule": error.get("rule"),
        "offset": error.get("offset"),
        "tensor": error.get("tensor"),
        "message": message,
        "reason": data.get("reason"),
        "size": data.get("size"),
        "tensors": data.get("tensors"),
        "parameters": data.get("parameters"),
        # The file's hash is the record's `deep.sha256` (the oracle once read `sha256` at the
        # top of `data`, where no record has it, so the column was always empty).
        "sha256": (data.get("deep") or {}).get("sha256"),
        "record": line,
    }


@pytest.fixture(scope="module")
def mixed(targets: List[str], tmp_path_factory: pytest.TempPathFactory) -> List[Any]:
    """Every kind of target a batch takes: the scan's files (valid, invalid), a set, a missing
    file and a FIFO, every corpus case (sets with missing shards among them), a directory,
    a URL nobody serves, and a file's contents."""
    directory = tmp_path_factory.mktemp("a-directory")
    data = pathlib.Path(targets[0]).read_bytes()
    return [*targets[:40], *targets[-3:], *(c["file"] for c in CASES), str(directory),
            pathlib.Path(targets[1]), "http://127.0.0.1:9/x.safetensors", data]


@pytest.mark.parametrize("opts", [
    {}, {"sha256": True}, {"profile": "reference"}, {"profile": "portable"},
    {"compare_reference": True, "deny_warnings": True}, {"verbose": True, "deep": True},
], ids=["strict", "sha256", "reference", "portable", "compare-deny", "verbose-deep"])
def test_batch_columns_are_the_records(mixed: List[Any], opts: Dict[str, Any]) -> None:
    """The native columns of a batch hold what the records say, for every kind of record."""
    cols = stcheck.dask.check_batch(mixed, opts)
    assert tuple(cols) == stcheck.dask.COLUMNS
    got = [dict(zip(cols, values)) for values in zip(*cols.values())]
    assert len(got) == len(mixed)
    for target, row in zip(mixed, got):
        assert row == _row(target, json.loads(row["record"]), row["record"])
    # The records are the lines `stcheck.records` parses. (Not with the reference crate: its
    # choice among several faults of one file follows its hash map's order, per run.)
    if opts.get("profile") != "reference" and not opts.get("compare_reference"):
        assert cols["record"] == stcheck._check.lines(mixed, **opts)
    assert {r["type"] for r in got} == {"file", "index", "not_checked"}
    statuses = {r["status"] for r in got}
    assert statuses == {"valid", "invalid", "io_error", "not_checked"}
    assert any(r["type"] == "index" and r["rule"] for r in got)  # a set's first error
    assert any(r["reason"] for r in got) and any(r["size"] for r in got)
    if opts.get("sha256"):
        assert sum(r["sha256"] is not None for r in got) == sum(r["status"] == "valid" and r["type"] == "file" for r in got)
    if opts.get("profile") == "reference":
        assert any(r["rule"] is None and r["message"] and r["status"] == "invalid" for r in got)


def test_a_batch_target_of_no_kind_is_refused() -> None:
    """Neither a path, a URL nor bytes: refused as ``records`` refuses it."""
    for check in (stcheck.records, stcheck.dask.check_batch):
        with pytest.raises(TypeError):
            check([1])


pyarrow = pytest.importorskip("pyarrow")


def _rows(directory: pathlib.Path) -> List[Dict[str, Any]]:
    """Every Parquet row of a scan, sorted by target (batches are files in no set order)."""
    import pyarrow.parquet as pq

    rows: List[Dict[str, Any]] = []
    for part in sorted(directory.glob("part-*.parquet")):
        rows.extend(pq.read_table(part).to_pylist())
    return sorted(rows, key=lambda r: r["target"])


def test_parquet_rows_are_the_records(cluster_client: Any, targets: List[str], tmp_path: pathlib.Path) -> None:
    want, want_summary = run_cli(["--jobs", "2"], targets)
    summary = stcheck.dask.scan_to_parquet(targets, tmp_path / "scan", client=cluster_client, batch_size=400)
    assert summary == want_summary
    rows = _rows(tmp_path / "scan")
    assert len(rows) == len(targets)
    by_target = {r["target"]: r for r in rows}
    for target, rec in zip(targets, want):
        row = by_target[target]
        assert json.loads(row["record"]) == rec
        assert row["type"] == rec["type"] and row["path"] == rec["data"]["path"]
        # A file's error, or a set's first error.
        error = rec["data"].get("error") or (rec["data"].get("errors") or [{}])[0]
        assert (row["rule"], row["offset"]) == (error.get("rule"), error.get("offset"))
    assert {r["status"] for r in rows} >= {"valid", "invalid", "io_error", "not_checked"}
    # The same rows through a Dask DataFrame, queryable.
    df = stcheck.dask.read_parquet(tmp_path / "scan").compute()
    assert len(df) == len(targets)
    assert (df["status"] == "invalid").sum() == want_summary["invalid"]


_KILLED_SCAN = """
import os
import sys
import stcheck.dask

# The fault injected: the scan's fourth batch is written under its temporary name and, at
# the rename that would publish it, the process says so and waits to be killed.
renames = 0
replace = os.replace

def held_replace(src, dst):
    global renames
    renames += 1
    if renames == 4:
        print("in flight", src, flush=True)
        sys.stdin.read()  # until killed (or the test's end closes the pipe: a hang guard)
        raise SystemExit("not killed")
    replace(src, dst)

os.replace = held_replace
targets = [line.rstrip("\\n") for line in open(sys.argv[1])]
stcheck.dask.scan_to_parquet(targets, sys.argv[2], batch_size=int(sys.argv[3]))
"""


def test_a_killed_scan_resumes_to_the_same_rows(targets: List[str], tmp_path: pathlib.Path) -> None:
    """Kill a scan (SIGKILL, the process that checks and writes) at a known point: three
    batches written, the fourth written under its temporary name and not yet renamed (the
    child is held there by a fault injected at its rename, and says so). Resume it, and get
    exactly the rows of an uninterrupted scan, the batch in flight checked again and its
    temporary file gone. No polling: the kill follows the child's own word."""
    import signal
    import subprocess
    import sys

    files = [t for t in targets if t.endswith(".safetensors") and "pipe" not in t]
    listing = tmp_path / "targets.txt"
    listing.write_text("\n".join(files) + "\n")
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_SCAN, str(listing), str(killed), "5"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        said = proc.stdout.readline() if proc.stdout else ""
        assert said.startswith("in flight "), f"the scan ended before its fourth batch: {said!r}"
        in_flight = pathlib.Path(said[len("in flight "):].rstrip("\n"))
        proc.send_signal(signal.SIGKILL)
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(120)
    assert proc.returncode == -signal.SIGKILL
    assert len(list(killed.glob("part-*.parquet"))) == 3
    assert in_flight.exists() and in_flight.name.endswith(".tmp")
    resumed = stcheck.dask.scan_to_parquet(files, killed, batch_size=5)
    whole = stcheck.dask.scan_to_parquet(files, tmp_path / "whole", batch_size=5)
    assert whole["files"] == len(files)
    assert resumed == whole
    assert _rows(killed) == _rows(tmp_path / "whole")
    assert not list(killed.glob("*.tmp"))


# Round-4 hostile cases (issue 35): concurrent and resumed scans lose nothing and misreport
# nothing; no secret of a URL reaches a Parquet file.


def _small_files(targets: List[str]) -> List[str]:
    return [t for t in targets if t.endswith(".safetensors") and "pipe" not in t][:40]


def test_a_second_scan_of_a_directory_in_use_is_refused(targets: List[str], tmp_path: pathlib.Path) -> None:
    """A scan holds its directory's lock: a second scan raises at once and removes nothing of
    the first one's batches in flight (it used to delete their temporary files)."""
    import fcntl

    out = tmp_path / "scan"
    out.mkdir()
    in_flight = out / "part-0123456789abcdef0123.parquet.aaaaaaaaaaaa.4242.tmp"
    in_flight.write_bytes(b"a batch being written by the first scan")
    with open(out / ".stcheck-scan.lock", "a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(RuntimeError, match="another scan is writing into this directory"):
            stcheck.dask.scan_to_parquet(_small_files(targets), out, batch_size=5)
        assert in_flight.exists()
        assert not list(out.glob("part-*.parquet"))
    # Once the first scan is gone, its unfinished batch is stale and a scan cleans it up.
    summary = stcheck.dask.scan_to_parquet(_small_files(targets), out, batch_size=5)
    assert summary["files"] == len(_small_files(targets))
    assert not in_flight.exists()


def test_a_resume_with_other_options_is_refused(targets: List[str], tmp_path: pathlib.Path) -> None:
    """Rows written by a header-only scan are not taken for a deep scan's: the resume is
    refused instead of reporting every target valid without scanning one."""
    files = _small_files(targets)
    out = tmp_path / "scan"
    first = stcheck.dask.scan_to_parquet(files, out, batch_size=8)
    assert first["files"] == len(files)
    with pytest.raises(ValueError, match="other options"):
        stcheck.dask.scan_to_parquet(files, out, batch_size=8, deep=True)
    # The same options resume (nothing left to do) to the same summary.
    assert stcheck.dask.scan_to_parquet(files, out, batch_size=8) == first


def test_a_corrupt_part_file_is_reported_and_rewritten(targets: List[str], tmp_path: pathlib.Path) -> None:
    files = _small_files(targets)
    out = tmp_path / "scan"
    whole = stcheck.dask.scan_to_parquet(files, out, batch_size=8)
    part = sorted(out.glob("part-*.parquet"))[2]
    part.write_bytes(part.read_bytes()[:100])  # a truncated copy
    with pytest.warns(stcheck.dask.CorruptPartWarning, match="not a readable Parquet file"):
        resumed = stcheck.dask.scan_to_parquet(files, out, batch_size=8)
    assert resumed == whole
    assert len(_rows(out)) == len(files)
    assert sorted(r["target"] for r in _rows(out)) == sorted(files)


def test_no_secret_of_a_url_in_any_column(tmp_path: pathlib.Path) -> None:
    """URL targets with user information, a presigned query and a fragment: no byte of the
    secrets is in the Parquet files (the target column used to hold the URL verbatim)."""
    import socket

    with socket.socket() as s:  # a port with nothing listening: every URL is not checked
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    urls = [
        f"http://user:hunter2pw@127.0.0.1:{port}/a.safetensors",
        f"http://127.0.0.1:{port}/b.safetensors?X-Amz-Signature=hunter2sig&X-Amz-Credential=hunter2cred",
        f"http://127.0.0.1:{port}/c.safetensors#hunter2frag",
    ]
    out = tmp_path / "scan"
    summary = stcheck.dask.scan_to_parquet(urls, out, batch_size=2, timeout=30)
    assert summary["not_checked"] + summary["io_errors"] == len(urls), summary
    for part in out.glob("part-*.parquet"):
        assert b"hunter2" not in part.read_bytes(), part
    rows = _rows(out)
    assert len(rows) == len(urls)
    for row in rows:
        assert all("hunter2" not in str(v) for v in row.values()), row
    # A resume finds the rows of the redacted targets: nothing is checked twice.
    assert stcheck.dask.scan_to_parquet(urls, out, batch_size=2, timeout=30) == summary
    assert len(_rows(out)) == len(urls)
