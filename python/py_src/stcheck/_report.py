"""Reports: read-only views of the records ``stcheck --json`` writes.

The native module returns each file's record as the CLI writes it (``stcheck_print::records``, the
schema's one source, documented in docs/json-output.md). ``Report`` and ``IndexReport`` keep
that record and give typed access to it; ``to_dict()`` returns it as it is, so its keys are
exactly the keys of the CLI's ``data`` object for the same options.

Reports are immutable, safe to share between threads, and pickle (by their record).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

__all__ = [
    "Finding",
    "TensorInfo",
    "DtypeTotal",
    "NonFinite",
    "DeepReport",
    "Report",
    "MissingShard",
    "IndexReport",
]


@dataclass(frozen=True)
class Finding:
    """A rule broken at a byte offset (an error, or a warning)."""

    rule: Optional[str]
    kind: Optional[str]
    severity: str
    promoted_warning: bool
    offset: Optional[int]
    offset_in: Optional[str]
    tensor: Optional[str]
    shard: Optional[str]
    message: str
    cause: Optional["Finding"] = None

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Finding":
        cause = d.get("cause")
        return cls(
            rule=d.get("rule"),
            kind=d.get("kind"),
            severity=d.get("severity", "error"),
            promoted_warning=bool(d.get("promoted_warning", False)),
            offset=d.get("offset"),
            offset_in=d.get("offset_in"),
            tensor=d.get("tensor"),
            shard=d.get("shard"),
            message=d.get("message", ""),
            cause=cls.from_dict(cause) if cause else None,
        )

    def __str__(self) -> str:
        # The library's Display: `RULE: shard "s": tensor "t": message (at offset 0x1a)`.
        parts = [f"{self.rule}: " if self.rule else ""]
        if self.shard is not None:
            parts.append(f"shard {json.dumps(self.shard)}: ")
        if self.tensor is not None:
            parts.append(f"tensor {json.dumps(self.tensor)}: ")
        parts.append(self.message)
        if self.offset is not None:
            where = "" if self.offset_in in (None, "file") else f" in the {self.offset_in}"
            parts.append(f" (at offset {self.offset:#x}{where})")
        if self.cause is not None:
            parts.append(f": {self.cause}")
        return "".join(parts)


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a valid file, in offset order."""

    name: str
    dtype: str
    shape: Tuple[int, ...]
    #: ``[begin, end)`` relative to the data region, as the header writes them.
    data_offsets: Tuple[int, int]
    #: ``[begin, end)`` as absolute offsets into the file.
    file_offsets: Tuple[int, int]
    elements: int
    #: The offset of the tensor's key in the header.
    header_offset: Optional[int] = None

    @property
    def nbytes(self) -> int:
        return self.data_offsets[1] - self.data_offsets[0]


@dataclass(frozen=True)
class DtypeTotal:
    """Totals of one dtype (``tensors`` and ``bytes`` are ``None`` in the reference profile)."""

    dtype: str
    tensors: Optional[int]
    parameters: int
    bytes: Optional[int]


@dataclass(frozen=True)
class NonFinite:
    """NaN and infinity counts of one tensor (deep scan)."""

    tensor: str
    dtype: str
    nan: int
    pos_inf: int
    neg_inf: int


@dataclass(frozen=True)
class DeepReport:
    """What the deep scan found: bytes scanned, the file's SHA-256, non-finite values (the
    first tensors holding one, as warnings are capped; ``non_finite_tensors`` counts them all)."""

    bytes_scanned: Optional[int]
    sha256: Optional[str]
    non_finite: Tuple[NonFinite, ...]
    non_finite_tensors: int = 0


def _totals(items: Optional[List[Dict[str, Any]]]) -> List[DtypeTotal]:
    return [
        DtypeTotal(t["dtype"], t.get("tensors"), t["parameters"], t.get("bytes"))
        for t in items or []
    ]


class _Record:
    """A record of the CLI's JSON Lines: ``type`` and ``data``.

    Either the record's ``data`` (parsed), or the native outcome of a check (``_native``,
    ``stcheck._native.Outcome``), which answers ``status`` itself and writes the record, with
    the CLI's printer, only when another field is asked for (then parsed once, and kept).
    """

    __slots__ = ("_type", "_parsed", "_native", "__weakref__")
    _type: str
    _parsed: Optional[Dict[str, Any]]
    _native: Any

    def __init__(self, record_type: str, data: Optional[Dict[str, Any]], native: Any = None) -> None:
        object.__setattr__(self, "_type", record_type)
        object.__setattr__(self, "_parsed", data)
        object.__setattr__(self, "_native", native)

    @property
    def _data(self) -> Dict[str, Any]:
        data = self._parsed
        if data is None:
            data = json.loads(self._native.line())["data"]
            object.__setattr__(self, "_parsed", data)
        return data

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __getstate__(self) -> Tuple[str, Dict[str, Any]]:
        return (self._type, self._data)

    def __setstate__(self, state: Tuple[str, Dict[str, Any]]) -> None:
        object.__setattr__(self, "_type", state[0])
        object.__setattr__(self, "_parsed", state[1])
        object.__setattr__(self, "_native", None)

    def __reduce__(self) -> Any:
        return (type(self)._from_state, (self._type, self._data))

    @classmethod
    def _from_state(cls, record_type: str, data: Dict[str, Any]) -> Any:
        return cls(record_type, data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Record):
            return NotImplemented
        return (self._type, self._data) == (other._type, other._data)

    __hash__ = None  # type: ignore[assignment]

    @property
    def path(self) -> str:
        """The path as given, shown as the CLI shows it (non-UTF-8 bytes as ``\\xNN``)."""
        if self._parsed is None:
            path = self._native.path
            if path is not None:
                return path  # type: ignore[no-any-return]
        return self._data["path"]

    @property
    def status(self) -> str:
        """``"valid"`` or ``"invalid"`` (under the chosen profile)."""
        if self._parsed is None:
            status = self._native.status
            if status is not None:
                return status  # type: ignore[no-any-return]
        return self._data["status"]

    @property
    def valid(self) -> bool:
        return self.status == "valid"

    def to_dict(self) -> Dict[str, Any]:
        """The record's ``data`` object, with exactly the keys ``stcheck --json`` writes."""
        return copy.deepcopy(self._data)

    def to_record(self) -> Dict[str, Any]:
        """The whole line: ``{"type": ..., "data": ...}``."""
        return {"type": self._type, "data": self.to_dict()}

    def to_json(self) -> str:
        """The record as one line of JSON (without the newline)."""
        if self._parsed is None:
            return self._native.line()  # type: ignore[no-any-return]
        return json.dumps(
            {"type": self._type, "data": self._data}, ensure_ascii=False, separators=(",", ":")
        )


class _Checked(_Record):
    """What the reports of a file and of a set have in common."""

    __slots__ = ()

    @property
    def warnings(self) -> List[Finding]:
        """The warnings, in file order (for a file, at most ``max_warnings_per_rule`` of each
        rule; ``warning_counts`` has them all)."""
        return [Finding.from_dict(w) for w in self._data.get("warnings", [])]

    @property
    def tensor_count(self) -> int:
        return self._data.get("tensors", 0)

    @property
    def parameters(self) -> int:
        return self._data.get("parameters", 0)

    @property
    def by_dtype(self) -> List[DtypeTotal]:
        """Totals per dtype, in the reference's dtype order."""
        return _totals(self._data.get("by_dtype"))


class Report(_Checked):
    """The report of one file, valid or not.

    The fields follow the CLI's ``"file"`` record (docs/json-output.md): ``tensors`` is the
    list of tensors (with ``verbose=True``, the default), ``tensor_count`` their number.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        if self.valid:
            return f"<stcheck.Report {self.path!r}: valid, {self.tensor_count} tensors>"
        return f"<stcheck.Report {self.path!r}: invalid, {self.error}>"

    @property
    def name(self) -> Optional[str]:
        """For a shard of a sharded set: its name as the index writes it."""
        return self._data.get("name")

    @property
    def profile(self) -> str:
        return self._data["profile"]

    @property
    def mode(self) -> Optional[str]:
        """``"mmap"``, ``"read"`` or ``"stream"``; ``None`` for bytes checked in memory."""
        return self._data["mode"]

    @property
    def size(self) -> Optional[int]:
        return self._data["size"]

    @property
    def error(self) -> Optional[Finding]:
        """The first error (malformed before invalid, each in file order), or ``None``."""
        e = self._data.get("error")
        return Finding.from_dict(e) if e else None

    @property
    def warning_counts(self) -> Dict[str, int]:
        return dict(self._data.get("warning_counts", {}))

    @property
    def omitted_warnings(self) -> int:
        return self._data.get("omitted_warnings", 0)

    @property
    def header_len(self) -> Optional[int]:
        return self._data.get("header_len")

    @property
    def tensors(self) -> List[TensorInfo]:
        """The tensors in offset order (with ``verbose=True``; else empty)."""
        out = []
        for t in self._data.get("tensor_list", []):
            file_offsets = tuple(t["file_offsets"])
            data_offsets = tuple(t.get("data_offsets", ()))
            if not data_offsets:  # the reference profile lists file offsets only
                data_offsets = file_offsets
            shape = tuple(t["shape"])
            elements = t.get("elements")
            if elements is None:
                elements = 1
                for d in shape:
                    elements *= d
            out.append(
                TensorInfo(
                    name=t["name"],
                    dtype=t["dtype"],
                    shape=shape,
                    data_offsets=data_offsets,  # type: ignore[arg-type]
                    file_offsets=file_offsets,  # type: ignore[arg-type]
                    elements=elements,
                    header_offset=t.get("header_offset"),
                )
            )
        return out

    @property
    def metadata(self) -> Optional[Dict[str, str]]:
        """``__metadata__`` (with ``verbose=True``), or ``None`` when absent or null."""
        m = self._data.get("metadata")
        return dict(m) if m is not None else None

    @property
    def metadata_form(self) -> Optional[str]:
        """``"absent"``, ``"null"`` or ``"map"``."""
        return self._data.get("metadata_form")

    @property
    def deep(self) -> Optional[DeepReport]:
        """The deep scan (``deep``, ``sha256`` or ``deny_nonfinite``), for a valid file."""
        d = self._data.get("deep")
        if d is None:
            return None
        return DeepReport(
            bytes_scanned=d.get("bytes_scanned"),
            sha256=d.get("sha256"),
            non_finite=tuple(NonFinite(**n) for n in d.get("non_finite", [])),
            non_finite_tensors=d.get("non_finite_tensors", 0),
        )

    @property
    def sha256(self) -> Optional[str]:
        """The file's SHA-256 in hex (with ``sha256=True``)."""
        d = self._data.get("deep")
        return d.get("sha256") if d else None

    @property
    def reference(self) -> Optional[Dict[str, Any]]:
        """The reference crate's verdict (``compare_reference`` or the reference profile)."""
        r = self._data.get("reference")
        return dict(r) if r is not None else None


class MissingShard(_Record):
    """A shard the index names that could not be checked (missing, a bad name or link)."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return self._data["name"]

    @property
    def error(self) -> Finding:
        return Finding.from_dict(self._data["error"])

    def __repr__(self) -> str:
        return f"<stcheck.MissingShard {self.name!r}: {self.error}>"


class IndexReport(_Checked):
    """The report of a sharded set checked through its ``*.safetensors.index.json``."""

    __slots__ = ()

    def __repr__(self) -> str:
        state = "valid" if self.valid else f"invalid, {self.error}"
        return f"<stcheck.IndexReport {self.path!r}: {state}, {len(self._data['shards'])} shards>"

    @property
    def shards(self) -> List[Union[Report, MissingShard]]:
        """Every distinct shard the index names, in order of first appearance."""
        return [
            MissingShard("shard", s) if s.get("status") == "missing" else Report("shard", s)
            for s in self._data.get("shards", [])
        ]

    @property
    def errors(self) -> List[Finding]:
        """The set's errors: index-level first, then per shard."""
        return [Finding.from_dict(e) for e in self._data.get("errors", [])]

    @property
    def error(self) -> Optional[Finding]:
        errors = self._data.get("errors") or []
        return Finding.from_dict(errors[0]) if errors else None

    @property
    def omitted_errors(self) -> int:
        return self._data.get("omitted_errors", 0)

    @property
    def total_size(self) -> Optional[int]:
        return self._data.get("total_size")

    @property
    def computed_size(self) -> Optional[int]:
        return self._data.get("computed_size")


for _cls in (Finding, TensorInfo, DtypeTotal, NonFinite, DeepReport, Report, MissingShard,
             IndexReport):
    _cls.__module__ = "stcheck"
