"""A strict loader with the names of ``safetensors``: ``load_file``, ``load``, ``safe_open``.

Switching is a change of import: ``from stcheck import load_file, safe_open`` (or
``from stcheck.numpy import load_file, load``). The difference: nothing is returned from a
file that fails strict validation. Each file is opened and checked by the library first;
only a valid file's tensors are handed out, at the offsets the check validated.

**Zero-copy.** The native module opens the file (``stcheck::fs::open_regular``), checks it
(``stcheck::check_file``) and, if it is valid, hands over the open file descriptor. This
module maps that descriptor with Python's ``mmap`` (copy-on-write: arrays are writable, and a
write never reaches the file) and builds each array with ``numpy.frombuffer`` at the validated
offset. The bytes mapped are the file that was checked: the same open file, so the same
inode, whatever happens to the path in between. An array whose offset is not a multiple of its
element size (``LAYOUT-ALIGN``, a warning) is copied to aligned memory.

As with any memory map, a file that another process rewrites while it is mapped can change
under the arrays. ``backend="read"`` (alias ``"pread"``) reads the file into memory once and
checks exactly those bytes instead (its arrays are read-only views of those bytes, as
``stcheck.load`` gives for ``bytes``).

**Dtypes.** numpy's own types directly; BF16 and the F8 formats through ``ml_dtypes`` when it is
installed (a clear ``ModuleNotFoundError`` naming it when not); the packed sub-byte formats F4,
F6_E2M3 and F6_E3M2 have no numpy type and raise ``TypeError`` for that tensor.

**Sharded checkpoints** (``*.safetensors.index.json``) are checked as a set first (the index
and every shard); the shards are then mapped from the very descriptors that were checked.
"""

from __future__ import annotations

import json
import mmap
import os
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple, Union

from . import _native
from ._check import PathLike, _is_index, options
from ._errors import ReadError, read_error, verdict_error
from ._report import IndexReport, Report, TensorInfo

if TYPE_CHECKING:
    import numpy as np

__all__ = ["load_file", "load", "safe_open"]

#: safetensors dtype -> numpy type name (little-endian, as the format stores them).
_NUMPY = {
    "BOOL": "bool",
    "U8": "u1",
    "I8": "i1",
    "U16": "<u2",
    "I16": "<i2",
    "F16": "<f2",
    "U32": "<u4",
    "I32": "<i4",
    "F32": "<f4",
    "U64": "<u8",
    "I64": "<i8",
    "F64": "<f8",
    "C64": "<c8",
}

#: safetensors dtype -> the ml_dtypes type.
_ML_DTYPES = {
    "BF16": "bfloat16",
    "F8_E5M2": "float8_e5m2",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E8M0": "float8_e8m0fnu",
    "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz",
}

_PACKED = ("F4", "F6_E2M3", "F6_E3M2")

_BACKENDS = {"mmap": "mmap", "read": "read", "pread": "read"}


def numpy_dtype(dtype: str) -> "np.dtype":
    """The numpy dtype of a safetensors dtype name (``ml_dtypes`` for BF16 and F8)."""
    import numpy as np

    if dtype in _NUMPY:
        return np.dtype(_NUMPY[dtype])
    if dtype in _ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError as e:
            raise ModuleNotFoundError(
                f"dtype {dtype} needs the ml_dtypes package, which is not installed "
                "(pip install ml_dtypes)",
                name="ml_dtypes",
            ) from e
        return np.dtype(getattr(ml_dtypes, _ML_DTYPES[dtype]))
    if dtype in _PACKED:
        raise TypeError(
            f"dtype {dtype} packs several elements per byte; numpy has no such type"
        )
    raise TypeError(f"dtype {dtype} has no numpy type")


def _loader_options(kw: Dict[str, Any], backend: str) -> Dict[str, Any]:
    allowed = {"deep", "sha256", "deny_warnings", "deny_nonfinite", "deny", "allow",
               "max_header_size", "max_warnings_per_rule", "follow_links", "threads"}
    unknown = set(kw) - allowed
    if unknown:
        raise TypeError(f"unexpected option(s): {', '.join(sorted(unknown))}")
    if backend not in _BACKENDS:
        raise ValueError(f"backend: {backend!r} is not 'mmap' or 'read' ('pread')")
    # The loader is always strict; the tensor list is needed to find the tensors.
    return options(profile="strict", verbose=True, mode=_BACKENDS[backend], **kw)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _map(fd: int) -> mmap.mmap:
    """A private (copy-on-write) map of the whole open file."""
    return mmap.mmap(fd, 0, access=mmap.ACCESS_COPY)


def _array(buffer: Any, t: TensorInfo) -> "np.ndarray":
    """The tensor ``t`` of a checked file held in ``buffer``: a view at its validated offset,
    copied only when the offset is not aligned for the dtype."""
    import numpy as np

    dtype = numpy_dtype(t.dtype)
    if t.elements == 0:
        return np.zeros(t.shape, dtype=dtype)
    arr = np.frombuffer(buffer, dtype=dtype, count=t.elements, offset=t.file_offsets[0])
    if not arr.flags.aligned:
        arr = arr.copy()
    return arr.reshape(t.shape)


class _Shard:
    """One checked file: its buffer and its report's tensors."""

    __slots__ = ("buffer", "report", "tensors")

    def __init__(self, buffer: Any, report: Report) -> None:
        self.buffer = buffer
        self.report = report
        self.tensors: Dict[str, TensorInfo] = {t.name: t for t in report.tensors}


def _verdict(kind: str, text: str, errno: Optional[int]) -> Union[Report, IndexReport]:
    data = json.loads(text)
    if kind == "not_checked" or data.get("status") == "io_error":
        raise read_error({"type": kind, "data": data}, errno)
    report: Union[Report, IndexReport] = (
        IndexReport(kind, data) if kind == "index" else Report(kind, data)
    )
    if not report.valid:
        raise verdict_error(report.error, report.path, report)
    return report


def _open_mapped(report: Report, handle: Tuple[int, int, int, int], mode: str, opts: Dict[str, Any]) -> _Shard:
    """Take over the descriptor of a checked file: map it (or read it and check those bytes)."""
    fd, dev, ino, size = handle
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (dev, ino) or st.st_size != size or size != report.size:
            raise ReadError(f"{report.path}: the file changed after it was checked")
        if mode == "mmap":
            return _Shard(_map(fd), report)
        chunks = []
        got = 0
        while got < size:
            chunk = os.pread(fd, min(size - got, 1 << 26), got)
            if not chunk:
                raise ReadError(f"{report.path}: the file got shorter after it was checked")
            chunks.append(chunk)
            got += len(chunk)
        data = b"".join(chunks)
        del chunks
        # The bytes in memory are what the arrays show: check exactly those.
        kind, text, errno = _native.check_bytes(data, report.path, opts)
        checked = _verdict(kind, text, errno)
        assert isinstance(checked, Report)
        return _Shard(data, checked)
    finally:
        _close(fd)


class _Slice:
    """``safe_open(...).get_slice(name)``: shape and dtype without reading, slicing on demand."""

    def __init__(self, owner: "safe_open", name: str) -> None:
        self._owner = owner
        self._name = name
        self._info = owner._info(name)[1]

    def get_shape(self) -> List[int]:
        return list(self._info.shape)

    def get_dtype(self) -> str:
        return self._info.dtype

    def __len__(self) -> int:
        if not self._info.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._info.shape[0]

    def __getitem__(self, index: Any) -> "np.ndarray":
        return self._owner.get_tensor(self._name)[index]


class safe_open:
    """Open a safetensors file (or a sharded set by its index) after a strict check.

    Like ``safetensors.safe_open(filename, framework="numpy")``: ``keys()``,
    ``offset_keys()``, ``get_tensor(name)``, ``get_tensors()``, ``get_slice(name)`` and
    ``metadata()``, usable with or without ``with``. A file that fails strict validation raises
    ``stcheck.SafetensorsError`` here, before any tensor is handed out; one that cannot be
    read raises ``stcheck.ReadError``. Extra keyword options are those of ``stcheck.check``
    that apply to a strict check (``deep``, ``deny_warnings``, ``deny_nonfinite``, ``deny``,
    ``allow``, ``max_header_size``, ``follow_links``, ...).
    """

    def __init__(
        self,
        filename: PathLike,
        framework: str = "numpy",
        device: str = "cpu",
        *,
        backend: str = "mmap",
        **kw: Any,
    ) -> None:
        if framework not in ("numpy", "np"):
            raise ValueError(f"framework: {framework!r} is not supported (only 'numpy')")
        if device != "cpu":
            raise ValueError(f"device: {device!r} is not supported (only 'cpu')")
        opts = _loader_options(kw, backend)
        self._shards: List[_Shard] = []
        self._where: Dict[str, int] = {}
        self._metadata: Optional[Dict[str, str]] = None
        self.report: Union[Report, IndexReport]
        if _is_index(filename):
            kind, text, errno, handles = _native.open_index_checked(filename, opts)
            try:
                report = _verdict(kind, text, errno)
            except BaseException:
                for _, (fd, *_rest) in handles:
                    _close(fd)
                raise
            assert isinstance(report, IndexReport)
            self.report = report
            shard_reports = {s.name: s for s in report.shards if isinstance(s, Report)}
            pending = list(handles)
            try:
                while pending:
                    name, handle = pending.pop(0)
                    self._add(_open_mapped(shard_reports[name], handle, opts["mode"], opts))
            finally:
                for _, (fd, *_rest) in pending:
                    _close(fd)
        else:
            kind, text, errno, opened = _native.open_checked(filename, opts)
            try:
                report = _verdict(kind, text, errno)
            except BaseException:
                if opened is not None:
                    _close(opened[0])
                raise
            assert isinstance(report, Report) and opened is not None
            self.report = report
            shard = _open_mapped(report, opened, opts["mode"], opts)
            self._metadata = shard.report.metadata
            self._add(shard)

    def _add(self, shard: _Shard) -> None:
        i = len(self._shards)
        self._shards.append(shard)
        for name in shard.tensors:
            self._where[name] = i

    def _info(self, name: str) -> Tuple[_Shard, TensorInfo]:
        try:
            shard = self._shards[self._where[name]]
        except KeyError:
            raise KeyError(f"no tensor named {name!r}") from None
        return shard, shard.tensors[name]

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: Any) -> None:
        # Arrays handed out keep their map alive; the rest is released with this object.
        self._shards = []
        self._where = {}

    def keys(self) -> List[str]:
        """The tensor names, sorted (as ``safetensors`` gives them)."""
        return sorted(self._where)

    def offset_keys(self) -> List[str]:
        """The tensor names in file order (shard by shard for a sharded set)."""
        return [name for shard in self._shards for name in shard.tensors]

    def metadata(self) -> Optional[Dict[str, str]]:
        """``__metadata__`` of the file, or ``None`` (also for a sharded set)."""
        return dict(self._metadata) if self._metadata is not None else None

    def get_tensor(self, name: str) -> "np.ndarray":
        """The tensor as a numpy array (a view of the map where the alignment allows)."""
        shard, t = self._info(name)
        return _array(shard.buffer, t)

    def get_tensors(self) -> Dict[str, "np.ndarray"]:
        """Every tensor, keyed by name, in file order."""
        return {name: self.get_tensor(name) for name in self.offset_keys()}

    def get_slice(self, name: str) -> _Slice:
        """A lazy view: ``get_shape()``, ``get_dtype()``, and ``[...]`` to read a part."""
        return _Slice(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())


def load_file(filename: PathLike, *, backend: str = "mmap", **kw: Any) -> Dict[str, "np.ndarray"]:
    """Load every tensor of a strictly valid file (or sharded set) as numpy arrays.

    ``safetensors.numpy.load_file``, except that a file that fails strict validation raises
    ``stcheck.SafetensorsError`` and nothing is returned. Options as for ``safe_open``.
    """
    with safe_open(filename, framework="numpy", backend=backend, **kw) as f:
        return f.get_tensors()


def load(data: Union[bytes, bytearray, memoryview], **kw: Any) -> Dict[str, "np.ndarray"]:
    """Load every tensor of a strictly valid file held in memory (``safetensors.numpy.load``).

    The arrays are views of ``data`` (read-only for ``bytes``), checked first.
    """
    opts = _loader_options(kw, "mmap")
    buffer = data if isinstance(data, bytes) else bytes(data)
    report = _verdict(*_native.check_bytes(buffer, "<bytes>", opts))
    assert isinstance(report, Report)
    return {t.name: _array(buffer, t) for t in report.tensors}

