"""The exceptions: a verdict (``SafetensorsError``) and a failure to read (``ReadError``).

A file that was read and breaks a rule raises ``SafetensorsError`` (a ``ValueError``):
``MalformedError`` when its bytes do not decode to one header (stage 1), ``InvalidError``
when they decode but break a rule (stage 2). Each carries the finding: ``.rule``,
``.offset``, ``.tensor`` (and ``.kind``, ``.shard``, ``.offset_in``, ``.finding``).

A file that could not be read raises ``ReadError``, an ``OSError``: it says nothing about
validity. ``NotFoundError`` is also a ``FileNotFoundError``, ``NotCheckedError`` is a path the
file-system policy refuses (a FIFO, socket or device, a link not followed, a loop).

Every exception pickles with its attributes, so it crosses process boundaries intact.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from ._report import Finding

__all__ = [
    "SafetensorsError",
    "SafetensorError",
    "MalformedError",
    "InvalidError",
    "ReadError",
    "NotFoundError",
    "NotCheckedError",
    "RemoteUnavailableError",
]


class SafetensorsError(ValueError):
    """The file (or sharded set) is not valid under the chosen profile.

    ``finding`` is the first error; ``rule``, ``offset`` and ``tensor`` are its fields (``rule``
    and ``offset`` are ``None`` for a rejection by the reference profile, which names no rule).
    ``path`` is the path as shown in reports and ``report`` the full report, when there is one.
    """

    finding: Optional[Finding]
    path: Optional[str]
    report: Any

    def __init__(
        self,
        message: str,
        *,
        finding: Optional[Finding] = None,
        path: Optional[str] = None,
        report: Any = None,
    ) -> None:
        super().__init__(message)
        self.finding = finding
        self.path = path
        self.report = report

    @property
    def rule(self) -> Optional[str]:
        """The SPEC.md rule ID, e.g. ``"LAYOUT-GAP"``."""
        return self.finding.rule if self.finding else None

    @property
    def offset(self) -> Optional[int]:
        """The byte offset of the fault (into the file, or as ``offset_in`` says)."""
        return self.finding.offset if self.finding else None

    @property
    def tensor(self) -> Optional[str]:
        """The tensor the error is about, where one applies."""
        return self.finding.tensor if self.finding else None

    @property
    def kind(self) -> Optional[str]:
        """``"malformed"`` or ``"invalid"``."""
        return self.finding.kind if self.finding else None

    @property
    def shard(self) -> Optional[str]:
        """For a sharded set: the shard the error is about."""
        return self.finding.shard if self.finding else None

    @property
    def offset_in(self) -> Optional[str]:
        """Which file ``offset`` points into: ``"file"``, ``"index"`` or ``"shard"``."""
        return self.finding.offset_in if self.finding else None


#: The name the ``safetensors`` package uses, so ``except SafetensorError`` keeps working.
SafetensorError = SafetensorsError


class MalformedError(SafetensorsError):
    """Stage 1: the bytes do not decode to one header (framing, UTF-8, JSON syntax)."""


class InvalidError(SafetensorsError):
    """Stage 2: the header decodes but breaks a rule (schema, dtypes, sizes, layout, data)."""


def verdict_error(finding: Optional[Finding], path: str, report: Any) -> SafetensorsError:
    """The exception for a rejected file whose first error is ``finding``."""
    cls = {"malformed": MalformedError, "invalid": InvalidError}.get(
        finding.kind if finding and finding.kind else "", SafetensorsError
    )
    message = f"{path}: {finding}" if finding else f"{path}: invalid"
    return cls(message, finding=finding, path=path, report=report)


class ReadError(OSError):
    """The file could not be read, so it was not checked: never a verdict.

    ``read_error`` is the record's code of why (``"not_found"``, ``"io"``, ...; for a URL the
    remote source's: ``"timeout"``, ``"tls"``, ``"http_status"``, ...; docs/json-output.md lists
    them), ``http_status`` the HTTP status a server answered with (for ``"http_status"``),
    ``reason`` the policy code of a path not checked (``"not_regular_file"``,
    ``"link_leaves_root"``, ...), ``record`` the record ``stcheck --json`` writes for it.
    """

    def __init__(self, *args: Any, record: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(*args)
        self.record: Dict[str, Any] = record or {}

    @property
    def read_error(self) -> Optional[str]:
        return self.record.get("data", {}).get("read_error")

    @property
    def http_status(self) -> Optional[int]:
        return self.record.get("data", {}).get("http_status")

    @property
    def reason(self) -> Optional[str]:
        return self.record.get("data", {}).get("reason")

    def __reduce__(self) -> Any:
        return (_rebuild_read_error, (type(self), self.args, self.filename, self.record))

    def __str__(self) -> str:
        message = self.strerror if self.strerror is not None else super().__str__()
        return f"{self.filename}: {message}" if self.filename is not None else str(message)


def _rebuild_read_error(
    cls: Any, args: Tuple[Any, ...], filename: Any, record: Dict[str, Any]
) -> "ReadError":
    e: ReadError = cls(*args, record=record)
    e.filename = filename
    return e


class NotFoundError(ReadError, FileNotFoundError):
    """No such file."""


class NotCheckedError(ReadError):
    """The path is refused by the file-system policy: a FIFO, socket or device (never
    opened in blocking mode), a link not followed, a loop, a directory."""


class RemoteUnavailableError(ReadError):
    """A URL was given, but this build of stcheck cannot check files by URL."""


def read_error(record: Dict[str, Any], errno: Optional[int]) -> ReadError:
    """The exception for a record of a path that could not be checked."""
    data = record.get("data", {})
    path = data.get("path")
    if record.get("type") == "not_checked":
        cls: type = NotCheckedError
        message = data.get("message", "not checked")
    else:
        cls = {
            "not_found": NotFoundError,
            "dangling_link": NotFoundError,
            "unsupported": RemoteUnavailableError,
        }.get(
            data.get("read_error"), ReadError
        )
        message = data.get("io_error", "could not be read")
    e: ReadError = cls(errno, message, record=record) if errno is not None else cls(message, record=record)
    e.strerror = message
    e.filename = path
    return e


for _cls in (SafetensorsError, MalformedError, InvalidError, ReadError, NotFoundError,
             NotCheckedError, RemoteUnavailableError):
    _cls.__module__ = "stcheck"
