"""Scale-out on Dask distributed: check many files on many machines, one record each.

A hub scans millions of files; stcheck writes no scheduler. This module maps the one check
(``stcheck.record``, the library's checker behind it) over a list of targets in partitions on
a Dask cluster, gathers the records, and sums them up::

    from dask.distributed import Client
    import stcheck.dask

    client = Client("tcp://scheduler:8786")            # or LocalCluster(n_workers=2)
    scan = stcheck.dask.scan(paths, client=client, deep=True, partition_size=256)
    scan.summary["exit_code"], scan.summary["invalid"]
    scan.write_jsonl(open("report.jsonl", "w"))         # what `stcheck --json` would write

Each record is exactly the line ``stcheck --json`` writes for that target
(``{"type": "file" | "index" | "not_checked", "data": {...}}``), and the summary is its
``summary`` line; the records come back in the order of ``targets``. Targets are paths
(files, or ``*.safetensors.index.json`` sharded sets checked as a set) as the workers see them
(a shared file system, or a local disk per worker with the paths it holds), and URLs, checked
by the library's remote source without downloading the files (``stcheck.is_url``).

The map step is ``check_partition(targets, options)`` (``stcheck.records``: a partition is
checked in one native call, its URLs concurrently, ``url_jobs`` at a time, under one deadline
for the partition), a plain function of a list of targets
and a dict of options returning ``(records, summary)``: it needs nothing from Dask, so the
same step runs on Ray or Spark (docs/python.md). Workers release the GIL while they check,
so threads in one worker check in parallel too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import IO, Any, Dict, Iterable, List, Optional, Sequence, Tuple

from . import _check

__all__ = [
    "check_partition",
    "check_batch",
    "summarize",
    "merge_summaries",
    "scan",
    "scan_to_parquet",
    "read_parquet",
    "records_bag",
    "Scan",
    "COLUMNS",
    "CorruptPartWarning",
]

#: The keys of the CLI's summary line, in its order.
SUMMARY_KEYS = ("files", "indexes", "valid", "invalid", "io_errors", "not_checked", "exit_code")


def _empty_summary() -> Dict[str, int]:
    return {k: 0 for k in SUMMARY_KEYS}


def _exit_code(s: Dict[str, int]) -> int:
    if s["io_errors"] > 0 or s["not_checked"] > 0:
        return 2
    return 1 if s["invalid"] > 0 else 0


def _count(summary: Dict[str, int], rec: Dict[str, Any]) -> None:
    """Count one record as the CLI's tally does (not_checked paths count only there)."""
    _count_kind(summary, rec["type"], rec["data"].get("status"))


def _count_kind(summary: Dict[str, int], kind: str, status: Optional[str], n: int = 1) -> None:
    """Count ``n`` records of this type and status."""
    if kind == "not_checked":
        summary["not_checked"] += n
        return
    summary["indexes" if kind == "index" else "files"] += n
    if status == "valid":
        summary["valid"] += n
    elif status == "invalid":
        summary["invalid"] += n
    else:
        summary["io_errors"] += n


def summarize(records: Iterable[Dict[str, Any]]) -> Dict[str, int]:
    """The CLI's ``summary`` line for these records."""
    s = _empty_summary()
    for rec in records:
        _count(s, rec)
    s["exit_code"] = _exit_code(s)
    return s


def merge_summaries(summaries: Iterable[Dict[str, int]]) -> Dict[str, int]:
    """Add up the summaries of partitions."""
    s = _empty_summary()
    for part in summaries:
        for k in SUMMARY_KEYS[:-1]:
            s[k] += part[k]
    s["exit_code"] = _exit_code(s)
    return s


def _keep(rec: Dict[str, Any], keep: str) -> bool:
    if keep == "all":
        return True
    if keep == "failures":
        return rec["type"] == "not_checked" or rec["data"].get("status") != "valid"
    return False


def check_partition(
    targets: Sequence[Any], options: Optional[Dict[str, Any]] = None, keep: str = "all"
) -> Tuple[List[Dict[str, Any]], Dict[str, int]]:
    """The map step: check each target, return its records (all, ``"failures"`` only, or
    ``"none"``) and the partition's summary. ``options`` are ``stcheck.record``'s keyword
    options (``deep``, ``sha256``, ``deny_warnings``, ``verbose``, ...)."""
    if keep not in ("all", "failures", "none"):
        raise ValueError(f"keep: {keep!r} is not 'all', 'failures' or 'none'")
    summary = _empty_summary()
    kept = []
    for rec in _check.records(list(targets), **dict(options or {})):
        _count(summary, rec)
        if _keep(rec, keep):
            kept.append(rec)
    summary["exit_code"] = _exit_code(summary)
    return kept, summary


@dataclass
class Scan:
    """What ``scan`` gathered: the kept records in target order, and the run's summary."""

    records: List[Dict[str, Any]] = field(default_factory=list)
    summary: Dict[str, int] = field(default_factory=_empty_summary)

    def write_jsonl(self, out: IO[str]) -> None:
        """The records and the summary as ``stcheck --json`` writes them, one per line."""
        for rec in self.records:
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
        out.write(json.dumps({"type": "summary", "data": self.summary}) + "\n")


def _partitions(targets: Sequence[Any], size: int) -> List[List[Any]]:
    if size < 1:
        raise ValueError("partition_size must be at least 1")
    return [list(targets[i:i + size]) for i in range(0, len(targets), size)]


def scan(
    targets: Iterable[Any],
    *,
    client: Any = None,
    partition_size: int = 256,
    keep: str = "all",
    **options: Any,
) -> Scan:
    """Check every target on a Dask cluster, ``partition_size`` targets per task.

    ``client`` is a ``distributed.Client`` (default: the current one, as
    ``distributed.get_client()`` finds it). Options are those of ``stcheck.record``
    (``verbose=False`` by default, as the CLI without ``-v``). ``keep="failures"`` gathers
    only the records of files that are not valid, for a scan too large to hold every record;
    the summary always counts everything.
    """
    from distributed import get_client

    if client is None:
        client = get_client()
    parts = _partitions(list(targets), partition_size)
    futures = client.map(
        check_partition, parts, options=options, keep=keep, pure=False, key=_keys(len(parts))
    )
    results = client.gather(futures)
    out = Scan()
    for kept, _ in results:
        out.records.extend(kept)
    out.summary = merge_summaries(s for _, s in results)
    return out


#: The columns of a scan's Parquet rows, one row per record: the target as given, the
#: record's type (``file``, ``index``, ``not_checked``), its path as shown, its status, the
#: error's rule, offset and tensor (if any), the message of an error or of a path not checked,
#: the policy reason of a path not checked, the file's size, tensor and parameter counts, its
#: SHA-256 (with ``sha256=True``), and the whole record as ``stcheck --json`` writes it.
COLUMNS = (
    "target", "type", "path", "status", "rule", "offset", "tensor", "message", "reason",
    "size", "tensors", "parameters", "sha256", "record",
)


def check_batch(targets: Sequence[Any], options: Optional[Dict[str, Any]] = None) -> Dict[str, List[Any]]:
    """The columnar map step: check each target (in one native call) and return the rows as
    columns (``COLUMNS``: one list per column, one entry per record, in target order). The
    columns are made natively from the records as they are printed (``stcheck._check.columns``),
    without parsing a record; a batch's result pickles as a few lists, not a dict per file,
    which is what makes batches of small files cheap to send back."""
    targets = list(targets)
    cols = _check.columns(targets, **dict(options or {}))
    cols["target"] = [_shown_target(t) for t in targets]
    return {c: cols[c] for c in COLUMNS}


def _shown_target(target: Any) -> str:
    """A target as its row names it: a URL without its secrets (user information, a query,
    a fragment: ``stcheck.shown_url``), as every record shows it; a path as given. Rows are
    files other people read; a presigned URL's signature must not end up in one."""
    if _check.is_url(target):
        from . import _native

        return _native.shown_url(str(target))
    return str(target)


def _summary_of_columns(cols: Dict[str, List[Any]]) -> Dict[str, int]:
    from collections import Counter

    s = _empty_summary()
    for (kind, status), n in Counter(zip(cols["type"], cols["status"])).items():
        _count_kind(s, kind, status, n)
    s["exit_code"] = _exit_code(s)
    return s


def _batch_name(targets: Sequence[Any]) -> str:
    import hashlib

    digest = hashlib.sha256("\0".join(map(str, targets)).encode("utf-8", "surrogateescape"))
    return f"part-{digest.hexdigest()[:20]}.parquet"


def _schema() -> Any:
    import pyarrow as pa

    s, i = pa.string(), pa.int64()
    types = {"offset": i, "size": i, "tensors": i, "parameters": i}
    return pa.schema([(c, types.get(c, s)) for c in COLUMNS])


#: The Parquet key-value metadata of a part file that names the options its rows were
#: checked with (``_options_key``): a resume compares it with its own.
_OPTIONS_KEY = b"stcheck.options"
#: The file a scan holds locked (``fcntl.flock``) while it writes into its directory.
_LOCK_NAME = ".stcheck-scan.lock"


class CorruptPartWarning(UserWarning):
    """A part file of a scan's directory that is not readable Parquet (a truncated copy, a
    disk that filled up): ``scan_to_parquet`` says so with this warning, removes it and checks
    its targets again."""


def _options_key(options: Optional[Dict[str, Any]]) -> str:
    """The options a scan's rows depend on, as one canonical text stored in every part
    file. Header values (tokens) are not stored, only their names; everything else is kept,
    so that a resume with other options (``deep``, ``sha256``, a profile...) is refused
    instead of skipping targets whose rows say something else."""
    shown: Dict[str, Any] = {}
    for name, value in sorted(dict(options or {}).items()):
        if name == "headers" and value:
            items = value.items() if isinstance(value, dict) else value
            value = sorted(str(h).split(":", 1)[0] if isinstance(h, str) else str(h[0]) for h in items)
        shown[name] = value
    return json.dumps(shown, sort_keys=True, default=str)


def _write_batch(
    targets: Sequence[Any],
    directory: str,
    options: Optional[Dict[str, Any]] = None,
    scan_id: str = "",
) -> Dict[str, int]:
    """Check one batch and write its rows as one Parquet file in ``directory``, atomically
    (written under a temporary name that names its scan, then renamed): a batch is either
    all there or not at all. Returns the batch's summary."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = check_batch(targets, options)
    name = os.path.join(directory, _batch_name(targets))
    tmp = f"{name}.{scan_id}.{os.getpid()}.tmp"
    schema = _schema().with_metadata({_OPTIONS_KEY: _options_key(options).encode()})
    pq.write_table(pa.table(cols, schema=schema), tmp)
    os.replace(tmp, name)
    return _summary_of_columns(cols)


def _done_targets(directory: str, options: Optional[Dict[str, Any]]) -> Tuple[set, Dict[str, int]]:
    """The targets that already have rows in ``directory``, and the summary of those rows.
    A part file written with other options is refused (``ValueError``); one that is not
    readable Parquet is reported (``CorruptPartWarning``) and removed, so that its targets
    are checked again."""
    import glob
    import os
    import warnings

    import pyarrow.parquet as pq

    want = _options_key(options)
    done: set = set()
    summary = _empty_summary()
    for path in sorted(glob.glob(os.path.join(directory, "part-*.parquet"))):
        try:
            meta = pq.read_schema(path).metadata or {}
            t = pq.read_table(path, columns=["target", "type", "status"]).to_pydict()
        except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
            warnings.warn(
                f"{path}: not a readable Parquet file ({e}); removed, its targets are checked again",
                CorruptPartWarning,
                stacklevel=3,
            )
            os.remove(path)
            continue
        have = meta.get(_OPTIONS_KEY, b"").decode("utf-8", "replace")
        if have != want:
            raise ValueError(
                f"{directory}: {os.path.basename(path)} holds rows checked with other options "
                f"({have or 'none recorded'}) than this scan's ({want}); a resume must use the "
                "same options: scan into another directory"
            )
        done.update(t["target"])
        part = _summary_of_columns(t)
        summary = merge_summaries([summary, part])
    return done, summary


def _lock(directory: str) -> Any:
    """Hold the directory's scan lock (released when the returned file is closed), or raise
    ``RuntimeError`` at once if another scan holds it: two scans writing into one directory
    would remove each other's batches in flight and write the same targets twice."""
    import fcntl
    import os

    f = open(os.path.join(directory, _LOCK_NAME), "a+")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise RuntimeError(
            f"{directory}: another scan is writing into this directory; wait for it to end, "
            "or scan into another directory"
        ) from None
    return f


def scan_to_parquet(
    targets: Iterable[Any],
    directory: Any,
    *,
    client: Any = None,
    batch_size: int = 1000,
    **options: Any,
) -> Dict[str, int]:
    """Check every target and write one Parquet row per record (``COLUMNS``) into
    ``directory``, one file per batch of ``batch_size`` targets, written by the workers
    themselves (the driver receives only each batch's summary). Returns the summary of every
    row in ``directory``, as the CLI's summary line counts.

    A target named twice is checked once. Resumable: targets that already have rows in
    ``directory`` are skipped, so a scan that was
    killed (a worker, or the whole run) is finished by calling it again with the same
    arguments; it loses at most the batches that were in flight, since a batch's file appears
    whole or not at all. A resume must use the same options: part files record the options
    their rows were checked with, and rows of other options are refused (``ValueError``), never
    taken for this scan's. A part file that is not readable Parquet is reported
    (``CorruptPartWarning``), removed and its targets checked again. One scan at a time writes
    into a directory: a second one raises ``RuntimeError`` at once (the directory's
    ``.stcheck-scan.lock`` is held with ``flock`` while a scan runs). A URL target's row names
    it as every record does, without user information, query or fragment. Read the rows with
    ``read_parquet(directory)`` (a Dask DataFrame) or
    any Parquet reader. ``client``: a ``distributed.Client``; ``None`` checks the batches in
    this process, one after another (no Dask needed). Options are those of ``stcheck.record``.
    """
    import os
    import uuid

    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    options = dict(options)
    with _lock(directory):
        # Under the lock no other scan is writing here: a temporary file is a batch of a
        # scan that was killed.
        for stale in os.listdir(directory):
            if stale.endswith(".tmp"):
                os.remove(os.path.join(directory, stale))
        done, summary = _done_targets(directory, options)
        # A target is the key of its rows (as its row shows it): each is checked once, in
        # the order first given.
        todo = []
        for t in targets:
            key = _shown_target(t)
            if key not in done:
                done.add(key)
                todo.append(t)
        batches = _partitions(todo, batch_size) if todo else []
        scan_id = uuid.uuid4().hex[:12]
        if client is None:
            results = [_write_batch(b, directory, options, scan_id) for b in batches]
        else:
            futures = client.map(
                _write_batch, batches, directory=directory, options=options, scan_id=scan_id,
                pure=False, key=_keys(len(batches)),
            )
            results = client.gather(futures)
    return merge_summaries([summary, *results])


def read_parquet(directory: Any) -> Any:
    """The rows of ``scan_to_parquet`` as a Dask DataFrame (``dask.dataframe.read_parquet``)."""
    import os

    import dask.dataframe as dd

    return dd.read_parquet(os.path.join(os.fspath(directory), "part-*.parquet"))


def _keys(n: int) -> List[str]:
    import uuid

    run = uuid.uuid4().hex[:12]
    return [f"stcheck-partition-{run}-{i}" for i in range(n)]


def records_bag(targets: Iterable[Any], *, partition_size: int = 256, **options: Any) -> Any:
    """The records as a ``dask.bag.Bag``, for composing: e.g.
    ``records_bag(paths).map(json.dumps).to_textfiles("out/*.jsonl")``."""
    import dask.bag as db

    bag = db.from_sequence(list(targets), partition_size=partition_size)
    return bag.map_partitions(lambda part: check_partition(part, options)[0])
