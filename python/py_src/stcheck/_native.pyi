"""The native half of stcheck (Rust, PyO3): a thin face over the gate and the JSON printer.

Each check returns ``(line, errno)`` per record: the JSON line ``stcheck --json`` writes
(``{"type": ..., "data": ...}``) and the OS error number of a target that could not be read.
``opts`` is the dict ``stcheck.options(...)`` builds, resolved by the same function as the
CLI's flags.
"""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

_Path = Union[str, PathLike[str]]
_Record = Tuple[str, Optional[int]]

class CheckedFile:
    """A file the loader found valid, kept open (closed when the object is released)."""

    def fileno(self) -> int: ...
    def read(self, offset: int, length: int) -> bytearray:
        """``length`` bytes at ``offset`` (pread, without the GIL); raises ``ReadFailed``."""
        ...

_Spec = Tuple[str, str, Tuple[int, ...], int, int, int]

class Outcome:
    """One record of a check: a checked file's verdict kept natively (its record written by
    the CLI's printer only when ``line()`` is called), or any other record's line."""

    @property
    def status(self) -> Optional[str]:
        """``"valid"``/``"invalid"`` for a checked file; ``None`` for any other record."""
        ...
    @property
    def errno(self) -> Optional[int]: ...
    @property
    def path(self) -> Optional[str]:
        """The path as the record shows it, for a checked file; ``None`` otherwise."""
        ...
    def line(self) -> str:
        """The JSON line ``stcheck --json`` writes (without the newline)."""
        ...
    def specs(self) -> Optional[List[_Spec]]:
        """A valid file's tensors: ``(name, dtype, shape, file offset, elements, bytes)``."""
        ...

class Runner:
    """The options of a run resolved once (``opts`` as for the functions below)."""

    def __init__(self, opts: Dict[str, Any]) -> None: ...
    def check(self, path: _Path) -> Outcome: ...
    def check_bytes(self, data: bytes, name: str) -> Outcome: ...
    def check_copy(self, data: Any, name: str) -> Tuple[Outcome, Any]:
        """Check one copy of ``data`` (a numpy view of a ``bytearray``/``memoryview``): the
        outcome, and the copy the check read (a ``bytearray``, or a numpy array from 256 KiB)."""
        ...
    def open(self, path: _Path, read: bool) -> Tuple[Outcome, Optional["_Kept"]]: ...

class ReadFailed(Exception):
    """A read of a checked file failed; ``args`` are ``(line, errno)``, its record."""

#: What the loader keeps of a valid file: the whole file read into memory and checked there
#: (``read=True``), or the open file that was checked.
_Kept = Union[bytearray, CheckedFile]

__version__: str
#: Whether URLs can be checked (the gate's remote checking is built in).
remote: bool

def check_paths(paths: List[_Path], opts: Dict[str, Any]) -> List[_Record]: ...
def check_tree(paths: List[_Path], opts: Dict[str, Any]) -> List[_Record]: ...
def check_url(url: str, opts: Dict[str, Any]) -> _Record: ...
def check_bytes(data: bytes, name: str, opts: Dict[str, Any]) -> _Record: ...
def check_columns(targets: Sequence[Any], kinds: bytes, opts: Dict[str, Any]) -> Dict[str, List[Any]]:
    """A batch, each target of the kind its byte in ``kinds`` says (0 a path, 1 a URL, 2 bytes):
    its records' columns (``stcheck.dask.COLUMNS`` but ``target``). The URLs are checked
    concurrently (``url_jobs`` at a time) under one deadline for the batch (``timeout``)."""
def check_lines(targets: Sequence[Any], kinds: bytes, opts: Dict[str, Any]) -> List[str]:
    """The batch of ``check_columns``: its records' JSON lines only."""
def open_index_checked(
    path: _Path, opts: Dict[str, Any], read: bool
) -> Tuple[str, Optional[int], List[Tuple[str, _Kept]]]: ...
def is_url(arg: str) -> bool: ...
def shown_url(arg: str) -> str: ...
def rules_table() -> List[Tuple[str, str, str]]: ...
