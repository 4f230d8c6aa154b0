"""Validation: ``check``, ``check_index``, ``validate`` and ``record``.

Every call goes to the native module, which opens the file with ``stcheck_gate::fs::open_regular``
and checks it with ``stcheck::check_file`` (the GIL released), and returns the record the CLI
writes. Nothing here decides validity: this module only turns records into reports or
exceptions.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _native
from ._errors import ReadError, read_error, verdict_error
from ._report import IndexReport, Report

__all__ = [
    "check", "check_index", "check_tree", "validate", "record", "records", "records_tree",
    "is_url", "options",
]

PathLike = Union[str, "os.PathLike[str]"]

#: The schemes a target string is taken as a URL for (the library's remote checking).
URL_SCHEMES = ("http://", "https://", "hf://")

_INDEX_SUFFIX = b".safetensors.index.json"
_BYTES = (bytes, bytearray, memoryview)


#: The library's defaults (``validator/src/limits.rs``: ``DEFAULT_MAX_HEADER_SIZE``,
#: ``DEFAULT_MAX_WARNINGS_PER_RULE``; a test compares them with that file).
DEFAULT_MAX_HEADER_SIZE = 100_000_000
DEFAULT_MAX_WARNINGS_PER_RULE = 100


def options(
    *,
    profile: str = "strict",
    deep: bool = False,
    sha256: bool = False,
    expect_sha256: Optional[str] = None,
    deny_warnings: bool = False,
    deny_nonfinite: bool = False,
    deny: Iterable[str] = (),
    allow: Iterable[str] = (),
    max_header_size: Optional[int] = DEFAULT_MAX_HEADER_SIZE,
    max_warnings_per_rule: Optional[int] = DEFAULT_MAX_WARNINGS_PER_RULE,
    compare_reference: bool = False,
    portable_to: Optional[Iterable[str]] = None,
    refusals_are_errors: bool = False,
    mode: str = "read",
    threads: int = 0,
    verbose: bool = True,
    follow_links: bool = False,
    allow_empty: bool = False,
    allow_other_formats: bool = False,
    exclude: Iterable[str] = (),
    url_jobs: Optional[int] = None,
    max_requests: Optional[int] = None,
    timeout: Optional[float] = None,
    headers: Optional[Dict[str, str]] = None,
    ca_file: Optional[PathLike] = None,
) -> Dict[str, Any]:
    """The options of a check, with their defaults, as the native module takes them.

    They mirror the CLI's flags and are resolved by the same function (the gate's
    ``RunOptions``), so a conflict the CLI refuses is refused here with the same message:
    ``profile`` (``--profile``: ``"strict"``, ``"reference"`` or ``"portable"``), ``deep``,
    ``sha256`` (implies ``deep``), ``expect_sha256`` (``--expect-sha256``: the SHA-256, 64
    hex digits, the one file checked must have; one more published id, compared with the
    file's and every id its server publishes, ``INTEGRITY-SHA256`` on any disagreement;
    implies ``sha256``; a ``ValueError`` for a set or several files), ``deny_warnings``, ``deny_nonfinite`` (implies ``deep``),
    ``deny``/``allow`` (warning rule IDs made errors / hidden), ``max_header_size``
    (100,000,000 bytes, the library's default; ``None`` means the same),
    ``max_warnings_per_rule`` (100; ``None`` means the same),
    ``compare_reference``, ``portable_to`` (reader IDs; implies the portable profile),
    ``refusals_are_errors``, ``mode`` (``"read"``, the default; ``"mmap"`` = ``--mmap``, which a
    file truncated during the check turns into a crash; ``"stream"``), ``verbose`` (``-v``: the
    tensor list and metadata), ``follow_links`` (links leaving the directory named),
    ``allow_empty`` (a directory with nothing to check is not a failure),
    ``allow_other_formats`` (files of other weight formats, such as pickle ``.bin`` or GGUF, are
    named but not a failure), ``exclude`` (gitignore-style globs the walk leaves out),
    ``url_jobs`` (the most URLs of a batch checked at the same time; ``None``, the default,
    is the CLI's: 64), ``max_requests`` (the run's budget of HTTP requests), ``timeout``
    (seconds for each URL with its data, or a set with all its shards, and for a whole batch
    of ``records``, ``lines`` or ``stcheck.dask``, whose URLs share one deadline; ``None``,
    the default, is the CLI's: 120 s for a header check, 1 hour when the data is read),
    ``headers``
    (extra request headers for URLs, sent only to the URL's own host), ``ca_file`` (PEM
    certificates trusted for https URLs). ``threads`` splits one file's deep scan.
    """
    if isinstance(deny, str) or isinstance(allow, str) or isinstance(portable_to, str):
        raise TypeError("deny, allow and portable_to take a list of IDs, not a string")
    return {
        "profile": profile,
        "deep": bool(deep),
        "sha256": bool(sha256),
        "expect_sha256": expect_sha256,
        "deny_warnings": bool(deny_warnings),
        "deny_nonfinite": bool(deny_nonfinite),
        "deny": list(deny),
        "allow": list(allow),
        "max_header_size": max_header_size,
        "max_warnings_per_rule": max_warnings_per_rule,
        "compare_reference": bool(compare_reference),
        "portable_to": None if portable_to is None else list(portable_to),
        "refusals_are_errors": bool(refusals_are_errors),
        "mode": mode,
        "threads": int(threads),
        "verbose": bool(verbose),
        "follow_links": bool(follow_links),
        "allow_empty": bool(allow_empty),
        "allow_other_formats": bool(allow_other_formats),
        "exclude": [exclude] if isinstance(exclude, str) else list(exclude),
        "url_jobs": url_jobs,
        "max_requests": max_requests,
        "timeout": None if timeout is None else float(timeout),
        "headers": [(str(k), str(v)) for k, v in (headers or {}).items()],
        "ca_file": None if ca_file is None else os.fspath(ca_file),
    }


def is_url(target: Any) -> bool:
    """Whether ``target`` is a string naming a URL (``http://``, ``https://``, ``hf://``, any
    case), as the CLI decides it. Only ``str`` targets are URLs: a ``pathlib.Path`` is always
    a path."""
    if not isinstance(target, str) or "://" not in target[:9]:
        return False
    try:
        target.encode("utf-8")
    except UnicodeEncodeError:
        return False  # a name that is not UTF-8 is a path, as for the CLI
    native = getattr(_native, "is_url", None)
    if native is not None:
        return bool(native(target))
    return target[:8].lower().startswith(URL_SCHEMES)


#: Runners (``_native.Runner``: the options resolved once) by the keyword options they were
#: made from, so that a loop of ``check(path)`` resolves its options once.
_RUNNERS: Dict[Any, Any] = {}
_RUNNERS_MAX = 64


def _runner(kw: Dict[str, Any]) -> Any:
    """The native runner for these keyword options (see ``options``), made once per set of
    options (options that cannot be a key, such as lists, make one per call)."""
    try:
        key = tuple(sorted(kw.items())) if kw else ()
        runner = _RUNNERS.get(key)
    except TypeError:
        return _native.Runner(options(**kw))
    if runner is None:
        runner = _native.Runner(options(**kw))
        if len(_RUNNERS) >= _RUNNERS_MAX:
            _RUNNERS.clear()
        _RUNNERS[key] = runner
    return runner


def _from_outcome(outcome: Any) -> Union[Report, IndexReport]:
    """The report of a native outcome (a checked file's stays native until asked); a target
    that could not be read raises ``ReadError``."""
    if outcome.status is not None:
        return Report("file", None, outcome)
    return _report(outcome.line(), outcome.errno)


def _is_index(path: Any) -> bool:
    return os.fsencode(path).endswith(_INDEX_SUFFIX)


def _native_record(target: Any, opts: Dict[str, Any], name: Optional[str]) -> Tuple[str, Optional[int]]:
    """The JSON line ``stcheck --json`` writes for ``target``, and the OS error number of a
    target that could not be read."""
    # `bytes` are a file's contents; a path held as bytes is given as a `pathlib.Path`.
    if isinstance(target, _BYTES):
        data = target if isinstance(target, bytes) else bytes(target)
        return _native.check_bytes(data, name or "<bytes>", opts)  # type: ignore[no-any-return]
    if is_url(target):
        # One record; a whole repository on the hub is a ValueError saying what to call.
        return _native.check_url(target, opts)  # type: ignore[no-any-return]
    return _native.check_paths([target], opts)[0]  # type: ignore[no-any-return]


def record(target: Any, *, name: Optional[str] = None, **opts: Any) -> Dict[str, Any]:
    """The record ``stcheck --json`` writes for ``target``: ``{"type": ..., "data": ...}``.

    Never raises for a file that is invalid or cannot be read: those are records too
    (``status: "invalid"``, ``status: "io_error"``, or ``type: "not_checked"``), exactly as the
    CLI writes them. ``target`` is a path, a URL, or ``bytes`` (shown as ``name``, default
    ``"<bytes>"``). An index path (``*.safetensors.index.json``) gives an ``index`` record.
    Defaults follow the CLI: ``verbose=False`` here (pass ``verbose=True`` for ``-v``).
    """
    opts.setdefault("verbose", False)
    line, _ = _native_record(target, options(**opts), name)
    return json.loads(line)  # type: ignore[no-any-return]


def records(targets: Sequence[Any], **opts: Any) -> List[Dict[str, Any]]:
    """``record`` for many targets, in order, in one native call (the GIL released once for
    all of them): the URLs checked concurrently (``url_jobs`` at a time, default 64) under one
    deadline for the whole call (``timeout``: however many URLs, the call takes no longer than
    one URL may), the paths and ``bytes`` one after another meanwhile."""
    return [json.loads(line) for line in lines(targets, **opts)]


def _batch(targets: Sequence[Any]) -> Tuple[Sequence[Any], bytes]:
    """The targets of a native batch call and their kinds: contents (2), URLs (1), paths (0);
    no object per target."""
    kinds = bytes(2 if isinstance(t, _BYTES) else 1 if is_url(t) else 0 for t in targets)
    if 2 in kinds:
        targets = [bytes(t) if isinstance(t, _BYTES) else t for t in targets]
    return targets, kinds


def lines(targets: Sequence[Any], **opts: Any) -> List[str]:
    """The JSON lines ``stcheck --json`` writes for ``targets`` (one each, in order), not
    parsed: what ``records`` parses, for a caller that stores the text as it is. One batch,
    as ``records`` checks it."""
    opts.setdefault("verbose", False)
    return _native.check_lines(*_batch(targets), options(**opts))  # type: ignore[no-any-return]


def columns(targets: Sequence[Any], **opts: Any) -> Dict[str, List[Any]]:
    """The records of ``lines(targets)`` as columns, by name: those of ``stcheck.dask.COLUMNS``
    but ``target``, one list each, one entry per target in order (``record`` holds the line).
    All targets go to one native call (one batch, as ``records`` checks it), which takes each
    column's value from the record as the printer writes it: no record is parsed here."""
    opts.setdefault("verbose", False)
    return _native.check_columns(*_batch(targets), options(**opts))  # type: ignore[no-any-return]


def records_tree(paths: Sequence[PathLike], **opts: Any) -> List[Dict[str, Any]]:
    """The records ``stcheck --json PATH...`` writes (without the summary), in its order:
    directories walked with the CLI's walker and link policy, each sharded set one ``index``
    record with its shards, paths not checked as ``not_checked`` records. A path ``-`` is the
    file of that name, not standard input."""
    opts.setdefault("verbose", False)
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]  # type: ignore[list-item]
    return [json.loads(line) for line, _ in _native.check_tree(list(paths), options(**opts))]


def _report(line: str, errno: Optional[int]) -> Union[Report, IndexReport]:
    record = json.loads(line)
    kind, data = record["type"], record["data"]
    if kind == "not_checked" or data.get("status") == "io_error":
        raise read_error(record, errno)
    if kind == "index":
        return IndexReport(kind, data)
    return Report(kind, data)


def check_tree(paths: Union[PathLike, Sequence[PathLike]], **opts: Any) -> List[Any]:
    """Check a directory (or several paths) as ``stcheck DIR`` does, with the same walker,
    link policy, not-checked reasons and index grouping: a report per file or sharded set, in
    the CLI's order. A path that could not be checked is a ``stcheck.ReadError`` in the list
    (not raised), so one unreadable file does not hide the others' verdicts."""
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]  # type: ignore[list-item]
    out: List[Any] = []
    for line, errno in _native.check_tree(list(paths), options(**opts)):  # type: ignore[arg-type]
        try:
            out.append(_report(line, errno))
        except ReadError as e:
            out.append(e)
    return out


def check(
    target: Union[PathLike, bytes, bytearray, memoryview],
    *,
    name: Optional[str] = None,
    **opts: Any,
) -> Any:
    """Check one file and return its report, valid or not.

    ``target`` is a path (``str`` or ``os.PathLike``, e.g. ``pathlib.Path``), the
    file's contents as ``bytes``/``bytearray``/``memoryview`` (shown as ``name``), or a URL
    (``http://``, ``https://``, ``hf://``: checked by the library's remote source). A path ending in ``.safetensors.index.json`` is
    checked as a sharded set, as ``check_index`` does. Options: see ``stcheck.options``
    (``profile="strict"``, ``deep=False``, ``sha256=False``, ``deny_warnings=False``,
    ``deny_nonfinite=False``, ...; ``verbose=True`` lists the tensors and metadata).

    A file that cannot be read raises ``stcheck.ReadError`` (an ``OSError``), never a verdict.
    """
    if isinstance(target, bytes):
        return _from_outcome(_runner(opts).check_bytes(target, name or "<bytes>"))
    if not isinstance(target, _BYTES) and not is_url(target):
        return _from_outcome(_runner(opts).check(target))
    line, errno = _native_record(target, options(**opts), name)
    return _report(line, errno)


def check_index(path: PathLike, **opts: Any) -> IndexReport:
    """Check a sharded set by its ``*.safetensors.index.json``: the index and every shard it
    names (each checked as a file with the same options), as one set."""
    report = _from_outcome(_runner(opts).check(path))
    assert isinstance(report, IndexReport)
    return report


def validate(
    target: Union[PathLike, bytes, bytearray, memoryview],
    *,
    name: Optional[str] = None,
    **opts: Any,
) -> Any:
    """Check ``target`` as ``check`` does and return the report of a valid file (or set);
    raise ``stcheck.MalformedError`` / ``stcheck.InvalidError`` (both ``SafetensorsError``, a
    ``ValueError``) for an invalid one, with ``.rule``, ``.offset`` and ``.tensor``."""
    report = check(target, name=name, **opts)
    if not report.valid:
        raise verdict_error(report.error, report.path, report)
    return report
