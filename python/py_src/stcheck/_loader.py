"""A strict loader with the names of ``safetensors``: ``load_file``, ``load``, ``safe_open``.

Switching is a change of import: ``from stcheck import load_file, safe_open`` (or
``from stcheck.numpy import load_file, load``). The difference: nothing is returned from a
file that fails strict validation. Each file is opened and checked by the library first;
only a valid file's tensors are handed out, at the offsets the check validated.

**Read into memory, checked there (the default).** ``load_file`` has the native module open
the file (``stcheck_gate::fs::open_regular``), read its length field and header with ordinary reads
(``pread``) and check them, then read the whole file into one buffer (a ``bytearray``, or from
256 KiB on a numpy ``uint8`` array over an anonymous map that the kernel populates in one call:
about twice as fast to fill as a ``bytearray``, and with no file behind it) and, with the deep
scan, check exactly that buffer. Each array is a ``numpy.frombuffer`` view of it: writable (as
``safetensors.numpy``'s are), and holding the very bytes that were checked, so nothing done to
the file afterwards (a truncation, a re-download in place, a rewrite) reaches them.
``safe_open`` checks the header the same way and keeps the checked file open (the same inode,
whatever happens to the path); ``get_tensor`` then reads that tensor with one ``pread`` into its
own buffer, and a file that got shorter meanwhile raises ``ReadError`` (reason ``"changed"``);
``load_file`` raises it for a file that changed in any way while it was read.
With ``deep`` (or ``sha256``, ``deny_nonfinite``) ``safe_open`` reads the whole file at once, as
``load_file`` does, so that the deep rules hold for the bytes it hands out.

**Zero-copy, on request: ``mmap=True``.** The checked file is mapped with Python's ``mmap``
(copy-on-write: a write to an array never reaches the file) and each array is a view of the
map: no copy, and pages read only when touched. The risk is the map's: a file that another
process rewrites while it is mapped changes under the arrays (the deep rules held when it was
checked, not after), and one that is truncated kills the process (SIGBUS) the next time an
array past its new end is touched. Use it only for files nobody writes while they are loaded.

An array whose offset is not a multiple of its element size (``LAYOUT-ALIGN``, a warning) is
copied to aligned memory.

**Dtypes.** numpy's own types directly; BF16 and the F8 formats through ``ml_dtypes`` when it is
installed (a clear ``ModuleNotFoundError`` naming it when not); the packed sub-byte formats F4,
F6_E2M3 and F6_E3M2 have no numpy type and raise ``TypeError`` for that tensor.

**Torch.** ``framework="pt"`` gives ``torch.Tensor``s from the same checked bytes:
``torch.frombuffer`` of the buffer (or map) at the validated offset, reshaped (numpy only
allocated the buffer); every dtype the installed torch has; ``device=`` as
``safetensors.torch`` takes it (made on the CPU, then moved). torch is optional: without it,
``ModuleNotFoundError`` names it.

**Tensor descriptions** come from the native check as ``(name, dtype, shape, file offset,
elements, bytes)`` tuples (``_native.Outcome.specs``): one ``frombuffer`` per tensor, no
record parsed. Only local files are loaded: a URL is refused as one.

**Sharded checkpoints** (``*.safetensors.index.json``) are checked as a set first (the index
and every shard); each shard is kept as one file is: its bytes read and checked, or its checked
file kept open.
"""

from __future__ import annotations

import json
import mmap as _mmap
import os
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple, Union

from . import _native
from ._check import PathLike, _is_index, _runner, is_url, options
from ._errors import ReadError, read_error, verdict_error
from ._report import IndexReport, Report, TensorInfo

if TYPE_CHECKING:
    import numpy as np

__all__ = ["load_file", "load", "safe_open", "torch_dtype"]

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

#: The values of ``backend`` (safetensors' names): accepted, and the same safe read for all.
_BACKENDS = ("pread", "read", "mmap")


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


_ALLOWED = frozenset(
    {"deep", "sha256", "expect_sha256", "deny_warnings", "deny_nonfinite", "deny", "allow",
     "max_header_size", "max_warnings_per_rule", "follow_links", "threads"}
)


def _loader_options(kw: Dict[str, Any], backend: str) -> Dict[str, Any]:
    """The keyword options of a loader's check, checked: those of ``stcheck.check`` that
    apply to a strict check."""
    if kw and not _ALLOWED.issuperset(kw):
        unknown = set(kw) - _ALLOWED
        raise TypeError(f"unexpected option(s): {', '.join(sorted(unknown))}")
    if backend not in _BACKENDS:
        raise ValueError(f"backend: {backend!r} is not 'pread', 'read' or 'mmap'")
    # The loader is always strict, and reads with ordinary reads (a map is only made here,
    # with mmap=True); the tensor list is needed to find the tensors.
    return dict(kw, profile="strict", verbose=True, mode="read")


def _loader_opts(kw: Dict[str, Any]) -> Dict[str, Any]:
    return options(**kw)


def _reads_data(kw: Dict[str, Any]) -> bool:
    return bool(
        kw.get("deep") or kw.get("sha256") or kw.get("expect_sha256") or kw.get("deny_nonfinite")
    )


def _map(fd: int) -> _mmap.mmap:
    """A private (copy-on-write) map of the whole open file."""
    return _mmap.mmap(fd, 0, access=_mmap.ACCESS_COPY)


#: safetensors dtype -> the torch dtype's name (those this torch has are used).
_TORCH = {
    "BOOL": "bool",
    "U8": "uint8",
    "I8": "int8",
    "U16": "uint16",
    "I16": "int16",
    "F16": "float16",
    "BF16": "bfloat16",
    "U32": "uint32",
    "I32": "int32",
    "F32": "float32",
    "U64": "uint64",
    "I64": "int64",
    "F64": "float64",
    "C64": "complex64",
    "F8_E5M2": "float8_e5m2",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E8M0": "float8_e8m0fnu",
    "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz",
}

#: The values of ``framework`` (safetensors' names): numpy, or torch.
_FRAMEWORKS = {"numpy": "np", "np": "np", "pt": "pt", "torch": "pt", "pytorch": "pt"}


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise ModuleNotFoundError(
            "framework='pt' needs the torch package, which is not installed (pip install torch)",
            name="torch",
        ) from e
    return torch


def torch_dtype(dtype: str) -> Any:
    """The ``torch.dtype`` of a safetensors dtype name (``TypeError`` for one this torch lacks)."""
    torch = _torch()
    found = getattr(torch, _TORCH.get(dtype, ""), None) if dtype in _TORCH else None
    if found is None:
        raise TypeError(f"dtype {dtype} has no torch type in torch {torch.__version__}")
    return found


def _framework(framework: str) -> str:
    try:
        fw = _FRAMEWORKS[framework]
    except (KeyError, TypeError):
        raise ValueError(
            f"framework: {framework!r} is not supported (only 'numpy'/'np' and 'pt'/'torch')"
        ) from None
    if fw == "pt":
        _torch()  # a clear error before anything is read
    return fw


def _device(fw: str, device: Any) -> Any:
    """The device tensors go to: ``None`` for the CPU (where they are made)."""
    if fw == "np":
        if device != "cpu":
            raise ValueError(f"device: {device!r} is not supported with numpy (only 'cpu')")
        return None
    torch = _torch()
    if isinstance(device, int) and not isinstance(device, bool):
        device = f"cuda:{device}"  # an index means a CUDA device, as in safetensors.torch
    d = torch.device(device)
    return None if d.type == "cpu" else d


#: A tensor as the loader needs it: name, dtype, shape, absolute offset, elements, bytes.
Spec = Tuple[str, str, Tuple[int, ...], int, int, int]


def _spec(t: TensorInfo) -> Spec:
    return (t.name, t.dtype, t.shape, t.file_offsets[0], t.elements, t.nbytes)


#: numpy's own dtypes by safetensors name, made once each (those of ml_dtypes are looked up
#: each time: whether it can be imported is asked again).
_NP_DTYPES: Dict[str, Any] = {}


def _np_dtype(dtype: str) -> Any:
    dt = numpy_dtype(dtype)
    if dtype in _NUMPY:
        _NP_DTYPES[dtype] = dt
    return dt


def _np_array(buffer: Any, dtype: str, shape: Tuple[int, ...], offset: int, elements: int) -> "np.ndarray":
    """A numpy view of ``buffer`` at ``offset``, copied only when it is not aligned."""
    import numpy as np

    dt = _NP_DTYPES.get(dtype) or _np_dtype(dtype)
    if elements == 0:
        return np.zeros(shape, dtype=dt)
    arr = np.frombuffer(buffer, dtype=dt, count=elements, offset=offset)
    if not arr.flags.aligned:
        arr = arr.copy()
    return arr.reshape(shape)


def _np_arrays(buffer: Any, specs: List[Spec]) -> Dict[str, "np.ndarray"]:
    """Every tensor of a checked file held in ``buffer``: one ``frombuffer`` each."""
    import numpy as np

    frombuffer = np.frombuffer
    out = {}
    for name, dtype, shape, offset, elements, _ in specs:
        dt = _NP_DTYPES.get(dtype) or _np_dtype(dtype)
        if elements == 0:
            out[name] = np.zeros(shape, dtype=dt)
            continue
        arr = frombuffer(buffer, dtype=dt, count=elements, offset=offset)
        if not arr.flags.aligned:
            arr = arr.copy()
        out[name] = arr.reshape(shape)
    return out


def _pt_tensor(buffer: Any, dtype: str, shape: Tuple[int, ...], offset: int, elements: int, nbytes: int) -> Any:
    """A ``torch.Tensor`` sharing ``buffer``'s memory at ``offset`` (kept alive by the
    tensor), copied to memory of its own when the offset is not aligned for the dtype."""
    torch = _torch()
    dt = torch_dtype(dtype)
    if elements == 0:
        return torch.empty(shape, dtype=dt)
    if offset % dt.itemsize:
        buffer, offset = bytearray(memoryview(buffer)[offset:offset + nbytes]), 0
    return torch.frombuffer(buffer, dtype=dt, count=elements, offset=offset).reshape(shape)


def _pt_tensors(buffer: Any, specs: List[Spec]) -> Dict[str, Any]:
    """Every tensor of a checked file held in ``buffer``: one ``torch.frombuffer`` each."""
    torch = _torch()
    frombuffer = torch.frombuffer
    dtypes: Dict[str, Any] = {}
    out = {}
    for name, dtype, shape, offset, elements, nbytes in specs:
        dt = dtypes.get(dtype)
        if dt is None:
            dt = dtypes[dtype] = torch_dtype(dtype)
        if elements == 0:
            out[name] = torch.empty(shape, dtype=dt)
        elif offset % dt.itemsize:
            out[name] = _pt_tensor(buffer, dtype, shape, offset, elements, nbytes)
        else:
            out[name] = frombuffer(buffer, dtype=dt, count=elements, offset=offset).reshape(shape)
    return out


def _tensor(fw: str, buffer: Any, s: Spec) -> Any:
    """The tensor ``s`` of a checked file held in ``buffer`` (a numpy ``uint8`` array, a
    ``bytearray`` or a map)."""
    if fw == "np":
        return _np_array(buffer, s[1], s[2], s[3], s[4])
    return _pt_tensor(buffer, s[1], s[2], s[3], s[4], s[5])


def _tensors(fw: str, buffer: Any, specs: List[Spec]) -> Dict[str, Any]:
    return _np_arrays(buffer, specs) if fw == "np" else _pt_tensors(buffer, specs)


class _Shard:
    """One checked file: its tensors (``specs``, in file order), and where their bytes are:
    ``buffer`` (the whole file read and checked, or a map of it), else read from ``file`` on
    demand."""

    __slots__ = ("buffer", "file", "report", "specs")

    def __init__(self, buffer: Any, file: Any, report: Report, specs: List[Spec]) -> None:
        self.buffer = buffer
        self.file = file
        self.report = report
        self.specs = specs

    def tensor(self, fw: str, s: Spec) -> Any:
        if self.buffer is not None:
            return _tensor(fw, self.buffer, s)
        if s[4] == 0:
            return _tensor(fw, b"", s)
        try:
            buffer = self.file.read(s[3], s[5])
        except _native.ReadFailed as e:
            line, errno = e.args
            raise read_error(json.loads(line), errno) from None
        return _tensor(fw, buffer, (s[0], s[1], s[2], 0, s[4], s[5]))


def _verdict(line: str, errno: Optional[int]) -> Union[Report, IndexReport]:
    record = json.loads(line)
    kind, data = record["type"], record["data"]
    if kind == "not_checked" or data.get("status") == "io_error":
        raise read_error(record, errno)
    report: Union[Report, IndexReport] = (
        IndexReport(kind, data) if kind == "index" else Report(kind, data)
    )
    if not report.valid:
        raise verdict_error(report.error, report.path, report)
    return report


def _valid(outcome: Any) -> Report:
    """The report of a native outcome of a valid file; raises otherwise."""
    if outcome.status != "valid":
        return _verdict(outcome.line(), outcome.errno)  # raises  # type: ignore[return-value]
    return Report("file", None, outcome)


def _shard(report: Report, kept: Any, how: str, specs: Optional[List[Spec]] = None) -> _Shard:
    """A checked file, as the native module kept it: a buffer of the whole file (a ``bytearray``
    or a numpy ``uint8`` array; read and checked there), or the open ``CheckedFile`` that was
    checked, to read from or map."""
    if specs is None:
        specs = [_spec(t) for t in report.tensors]
    if not isinstance(kept, _native.CheckedFile):
        return _Shard(kept, None, report, specs)
    if how == "map":
        fd = kept.fileno()
        if os.fstat(fd).st_size != report.size:
            raise ReadError(f"{report.path}: the file changed after it was checked")
        return _Shard(_map(fd), None, report, specs)
    return _Shard(None, kept, report, specs)


def _open(filename: PathLike, how: str, kw: Dict[str, Any]) -> Tuple[Union[Report, IndexReport], List[_Shard]]:
    """Check ``filename`` (a file, or a sharded set by its index) and keep each valid file
    ``how`` says: ``"read"`` (read into memory and checked there), ``"open"`` (kept open, its
    tensors read on demand) or ``"map"`` (kept open, then mapped)."""
    read = how == "read"
    if _is_index(filename):
        line, errno, kept = _native.open_index_checked(filename, _loader_opts(kw), read)
        report = _verdict(line, errno)
        assert isinstance(report, IndexReport)
        shard_reports = {s.name: s for s in report.shards if isinstance(s, Report)}
        return report, [_shard(shard_reports[name], k, how) for name, k in kept]
    outcome, one = _runner(kw).open(filename, read)
    report = _valid(outcome)
    assert one is not None
    return report, [_shard(report, one, how, outcome.specs())]


class _Slice:
    """``safe_open(...).get_slice(name)``: shape and dtype without reading, slicing on demand."""

    def __init__(self, owner: "safe_open", name: str) -> None:
        self._owner = owner
        self._name = name
        self._info = owner._info(name)[1]

    def get_shape(self) -> List[int]:
        return list(self._info[2])

    def get_dtype(self) -> str:
        return self._info[1]

    def __len__(self) -> int:
        if not self._info[2]:
            raise TypeError("len() of a 0-d tensor")
        return self._info[2][0]

    def __getitem__(self, index: Any) -> Any:
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

    The checked file stays open (until the object is released or the ``with`` block ends), and
    ``get_tensor`` reads each tensor from it into memory of its own: a file that got shorter
    since the check raises ``ReadError`` (reason ``"changed"``); one rewritten in place gives
    the bytes it holds now (the header's rules still hold; use ``deep=True`` to keep the
    checked bytes). With ``deep`` (or ``sha256``,
    ``deny_nonfinite``) the whole file is read and checked at once instead, and tensors come
    from those checked bytes. ``mmap=True`` maps the checked file and hands out views of the
    map (zero-copy; see the module documentation for its risk). ``backend`` takes
    safetensors' values (``"pread"``, ``"mmap"``; ``"read"`` too) and changes nothing: stcheck
    always reads with ordinary reads unless ``mmap=True``.
    """

    def __init__(
        self,
        filename: PathLike,
        framework: str = "numpy",
        device: Any = "cpu",
        *,
        mmap: bool = False,
        backend: str = "pread",
        **kw: Any,
    ) -> None:
        if is_url(filename):
            raise _no_urls(filename)  # type: ignore[arg-type]
        self._fw = _framework(framework)
        self._device = _device(self._fw, device)
        opts = _loader_options(kw, backend)
        how = "map" if mmap else "read" if _reads_data(opts) else "open"
        self._shards: List[_Shard] = []
        self._where: Dict[str, Tuple[int, Spec]] = {}
        self.report: Union[Report, IndexReport]
        self.report, shards = _open(filename, how, opts)
        # `__metadata__` of one file; a sharded set has none.
        self._one = isinstance(self.report, Report)
        for shard in shards:
            self._add(shard)

    def _add(self, shard: _Shard) -> None:
        i = len(self._shards)
        self._shards.append(shard)
        for spec in shard.specs:
            self._where[spec[0]] = (i, spec)

    def _info(self, name: str) -> Tuple[_Shard, Spec]:
        try:
            i, spec = self._where[name]
        except KeyError:
            raise KeyError(f"no tensor named {name!r}") from None
        return self._shards[i], spec

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: Any) -> None:
        # The open files are closed with their shards; arrays handed out keep their own
        # memory (or their map) alive.
        self._shards = []
        self._where = {}

    def keys(self) -> List[str]:
        """The tensor names, sorted (as ``safetensors`` gives them)."""
        return sorted(self._where)

    def offset_keys(self) -> List[str]:
        """The tensor names in file order (shard by shard for a sharded set)."""
        return [s[0] for shard in self._shards for s in shard.specs]

    def metadata(self) -> Optional[Dict[str, str]]:
        """``__metadata__`` of the file, or ``None`` (also for a sharded set)."""
        if not self._one or not self._shards:
            return None
        metadata = self._shards[0].report.metadata
        return dict(metadata) if metadata is not None else None

    def get_tensor(self, name: str) -> Any:
        """The tensor as a numpy array (a ``torch.Tensor`` with ``framework="pt"``): read from
        the checked file into memory of its own (or a view of the checked bytes, or of the map
        with ``mmap=True``)."""
        shard, t = self._info(name)
        tensor = shard.tensor(self._fw, t)
        return tensor if self._device is None else tensor.to(self._device)

    def get_tensors(self) -> Dict[str, Any]:
        """Every tensor, keyed by name, in file order."""
        return {name: self.get_tensor(name) for name in self.offset_keys()}

    def get_slice(self, name: str) -> _Slice:
        """A lazy view: ``get_shape()``, ``get_dtype()``, and ``[...]`` to read a part."""
        return _Slice(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())


def load_file(
    filename: PathLike,
    *,
    framework: str = "numpy",
    device: Any = "cpu",
    mmap: bool = False,
    backend: str = "pread",
    **kw: Any,
) -> Dict[str, Any]:
    """Load every tensor of a strictly valid file (or sharded set) as numpy arrays (or
    ``torch.Tensor``s with ``framework="pt"``, on ``device``).

    ``safetensors.numpy.load_file`` (``safetensors.torch.load_file``), except that a file that
    fails strict validation raises ``stcheck.SafetensorsError`` and nothing is returned. The
    file is read into memory once (one buffer per file) and checked there; the tensors are
    views of that buffer, so they hold the bytes that were checked whatever happens to the file
    later. ``mmap=True`` hands out views of a map of the file instead (zero-copy, with the
    map's risk: see the module documentation). Options as for ``safe_open``.
    """
    if is_url(filename):
        raise _no_urls(filename)
    fw = _framework(framework)
    to = _device(fw, device)
    opts = _loader_options(kw, backend)
    _, shards = _open(filename, "map" if mmap else "read", opts)
    # Each shard holds its bytes (read, or mapped): one frombuffer per tensor.
    if len(shards) == 1:
        out = _tensors(fw, shards[0].buffer, shards[0].specs)
    else:
        out = {}
        for sh in shards:
            out.update(_tensors(fw, sh.buffer, sh.specs))
    if to is not None:
        out = {name: t.to(to) for name, t in out.items()}
    return out


def load(data: Union[bytes, bytearray, memoryview], *, framework: str = "numpy", **kw: Any) -> Dict[str, Any]:
    """Load every tensor of a strictly valid file held in memory (``safetensors.numpy.load``;
    ``safetensors.torch.load`` with ``framework="pt"``).

    The arrays are read-only views of ``data`` when it is ``bytes`` (immutable), else of a
    ``bytes`` copy of it taken before the check: either way, of the bytes that were checked.
    Torch tensors are views of one writable copy of the checked bytes (torch has no read-only
    tensors), as ``safetensors.torch.load``'s are new tensors: for ``bytes``, a copy taken
    after the check; for a ``bytearray`` or ``memoryview``, the copy the check itself read
    (one copy, not a ``bytes`` one for the check and a ``bytearray`` one for torch).
    """
    fw = _framework(framework)
    opts = _loader_options(kw, "pread")
    if fw == "pt" and not isinstance(data, bytes):
        import numpy

        view = memoryview(data)
        if not view.c_contiguous:
            view = memoryview(view.tobytes())
        outcome, copy = _runner(opts).check_copy(numpy.frombuffer(view, dtype=numpy.uint8), "<bytes>")
        _valid(outcome)
        return _tensors(fw, copy, outcome.specs())
    buffer = data if isinstance(data, bytes) else bytes(data)
    outcome = _runner(opts).check_bytes(buffer, "<bytes>")
    _valid(outcome)
    held: Any = buffer if fw == "np" else bytearray(buffer)
    return _tensors(fw, held, outcome.specs())


def _no_urls(target: str) -> ReadError:
    """The loader reads local files only: a URL is refused by name, shown as every output
    shows it (no user information, query or fragment: they may be credentials), and
    ``stcheck.check`` takes it; loading tensors over the network is not supported."""
    return ReadError(
        f"{_native.shown_url(target)}: the loader reads local files only; URLs are not supported "
        "(stcheck.check checks a URL; download the file to load its tensors)"
    )
