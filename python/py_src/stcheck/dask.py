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

The map step is ``check_partition(targets, options)`` (``stcheck.records``: the paths of a
partition are checked in one native call), a plain function of a list of targets
and a dict of options returning ``(records, summary)``: it needs nothing from Dask, so the
same step runs on Ray or Spark (docs/python.md). Workers release the GIL while they check,
so threads in one worker check in parallel too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import IO, Any, Dict, Iterable, List, Optional, Sequence, Tuple

from . import _check

__all__ = ["check_partition", "summarize", "merge_summaries", "scan", "records_bag", "Scan"]

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
    kind, data = rec["type"], rec["data"]
    if kind == "not_checked":
        summary["not_checked"] += 1
        return
    summary["indexes" if kind == "index" else "files"] += 1
    status = data.get("status")
    if status == "valid":
        summary["valid"] += 1
    elif status == "invalid":
        summary["invalid"] += 1
    else:
        summary["io_errors"] += 1


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
