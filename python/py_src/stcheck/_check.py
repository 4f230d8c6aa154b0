"""Validation: ``check``, ``check_index``, ``validate`` and ``record``.

Every call goes to the native module, which opens the file with ``stcheck::fs::open_regular``
and checks it with ``stcheck::check_file`` (the GIL released), and returns the record the CLI
writes. Nothing here decides validity: this module only turns records into reports or
exceptions.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _native
from ._errors import RemoteUnavailableError, read_error, verdict_error
from ._report import IndexReport, Report

__all__ = ["check", "check_index", "validate", "record", "records", "is_url", "options"]

PathLike = Union[str, "os.PathLike[str]"]

#: The schemes a target string is taken as a URL for (the library's remote checking).
URL_SCHEMES = ("http://", "https://", "hf://")

_INDEX_SUFFIX = b".safetensors.index.json"
_BYTES = (bytes, bytearray, memoryview)


def options(
    *,
    profile: str = "strict",
    deep: bool = False,
    sha256: bool = False,
    deny_warnings: bool = False,
    deny_nonfinite: bool = False,
    deny: Iterable[str] = (),
    allow: Iterable[str] = (),
    max_header_size: Optional[int] = None,
    max_warnings_per_rule: Optional[int] = None,
    compare_reference: bool = False,
    mode: str = "read",
    threads: int = 0,
    verbose: bool = True,
    follow_links: bool = False,
) -> Dict[str, Any]:
    """The options of a check, with their defaults, as the native module takes them.

    They mirror the CLI's flags: ``profile`` (``--profile``), ``deep``, ``sha256`` (implies
    ``deep``), ``deny_warnings``, ``deny_nonfinite`` (implies ``deep``), ``deny``/``allow``
    (warning rule IDs made errors / hidden), ``max_header_size``, ``max_warnings_per_rule``,
    ``compare_reference``, ``mode`` (``"read"``, the default; ``"mmap"`` = ``--mmap``, which a
    file truncated during the check turns into a crash; ``"stream"``),
    ``verbose`` (``-v``: the tensor list and metadata), ``follow_links`` (shard links leaving
    the index's directory). ``threads`` splits one file's deep scan.
    """
    if isinstance(deny, str) or isinstance(allow, str):
        raise TypeError("deny and allow take a list of rule IDs, not a string")
    return {
        "profile": profile,
        "deep": bool(deep),
        "sha256": bool(sha256),
        "deny_warnings": bool(deny_warnings),
        "deny_nonfinite": bool(deny_nonfinite),
        "deny": list(deny),
        "allow": list(allow),
        "max_header_size": max_header_size,
        "max_warnings_per_rule": max_warnings_per_rule,
        "compare_reference": bool(compare_reference),
        "mode": mode,
        "threads": int(threads),
        "verbose": bool(verbose),
        "follow_links": bool(follow_links),
    }


def is_url(target: Any) -> bool:
    """Whether ``target`` is a string naming a URL (``http://``, ``https://``, ``hf://``, any
    case), as the CLI decides it. Only ``str`` targets are URLs: a ``pathlib.Path`` is always
    a path."""
    if not isinstance(target, str):
        return False
    try:
        target.encode("utf-8")
    except UnicodeEncodeError:
        return False  # a name that is not UTF-8 is a path, as for the CLI
    native = getattr(_native, "is_url", None)
    if native is not None:
        return bool(native(target))
    return target[:8].lower().startswith(URL_SCHEMES)


def _is_index(path: Any) -> bool:
    return os.fsencode(path).endswith(_INDEX_SUFFIX)


def _native_record(target: Any, opts: Dict[str, Any], name: Optional[str]) -> Tuple[str, str, Optional[int]]:
    # `bytes` are a file's contents; a path held as bytes is given as a `pathlib.Path`.
    if isinstance(target, _BYTES):
        data = target if isinstance(target, bytes) else bytes(target)
        return _native.check_bytes(data, name or "<bytes>", opts)
    if is_url(target):
        return _check_url(target, opts)
    if _is_index(target):
        return _native.check_index(target, opts)
    return _native.check_path(target, opts)


def _check_url(url: str, opts: Dict[str, Any]) -> Tuple[str, str, Optional[int]]:
    """The one way URLs are checked: the native ``check_url``, which runs the library's remote
    source (``stcheck::remote``, the native crate's default feature ``remote``) and returns the
    record ``stcheck --json URL`` writes. A build without it gives an ``io_error`` record (and
    ``check`` raises ``RemoteUnavailableError``): a URL is never valid unless checked."""
    native = getattr(_native, "check_url", None)
    if native is not None:
        return native(url, opts)  # type: ignore[no-any-return]
    data = {
        "path": url,
        "status": "io_error",
        "io_error": "checking files by URL needs stcheck built with remote checking "
        "(the `remote` feature), which this build lacks",
        "read_error": "unsupported",
    }
    return ("file", json.dumps(data), None)


def record(target: Any, *, name: Optional[str] = None, **opts: Any) -> Dict[str, Any]:
    """The record ``stcheck --json`` writes for ``target``: ``{"type": ..., "data": ...}``.

    Never raises for a file that is invalid or cannot be read: those are records too
    (``status: "invalid"``, ``status: "io_error"``, or ``type: "not_checked"``), exactly as the
    CLI writes them. ``target`` is a path, a URL, or ``bytes`` (shown as ``name``, default
    ``"<bytes>"``). An index path (``*.safetensors.index.json``) gives an ``index`` record.
    Defaults follow the CLI: ``verbose=False`` here (pass ``verbose=True`` for ``-v``).
    """
    opts.setdefault("verbose", False)
    kind, text, _ = _native_record(target, options(**opts), name)
    return {"type": kind, "data": json.loads(text)}


def records(targets: Sequence[Any], **opts: Any) -> List[Dict[str, Any]]:
    """``record`` for many targets, in order: paths are checked in one native call (the GIL
    released once for all of them), URLs and ``bytes`` one by one."""
    opts.setdefault("verbose", False)
    o = options(**opts)
    outcomes: List[Any] = [None] * len(targets)
    paths = [i for i, t in enumerate(targets) if not is_url(t) and not isinstance(t, _BYTES)]
    for i, outcome in zip(paths, _native.check_paths([targets[i] for i in paths], o)):
        outcomes[i] = outcome
    for i, t in enumerate(targets):
        if outcomes[i] is None:
            outcomes[i] = _native_record(t, o, None)
    return [{"type": kind, "data": json.loads(text)} for kind, text, _ in outcomes]


def _report(kind: str, text: str, errno: Optional[int]) -> Union[Report, IndexReport]:
    data = json.loads(text)
    if kind == "not_checked" or data.get("status") == "io_error":
        raise read_error({"type": kind, "data": data}, errno)
    if kind == "index":
        return IndexReport(kind, data)
    return Report(kind, data)


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
    kind, text, errno = _native_record(target, options(**opts), name)
    return _report(kind, text, errno)


def check_index(path: PathLike, **opts: Any) -> IndexReport:
    """Check a sharded set by its ``*.safetensors.index.json``: the index and every shard it
    names (each checked as a file with the same options), as one set."""
    kind, text, errno = _native.check_index(path, options(**opts))
    report = _report(kind, text, errno)
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
