"""The native half of stcheck (Rust, PyO3): thin calls into the library.

Each check returns ``(type, json, errno)``: the record type the CLI writes (``"file"``,
``"index"`` or ``"not_checked"``), the record's ``data`` as JSON text, and the OS error number
of a file that could not be read. ``opts`` is the dict ``stcheck.options(...)`` builds.
"""

from os import PathLike
from typing import Any, Dict, List, Optional, Tuple, Union

_Path = Union[str, PathLike[str]]
_Outcome = Tuple[str, str, Optional[int]]

class CheckedFile:
    """A file the loader found valid, kept open (closed when the object is released)."""

    def fileno(self) -> int: ...
    def read(self, offset: int, length: int) -> bytearray:
        """``length`` bytes at ``offset`` (pread, without the GIL); raises ``ReadFailed``."""
        ...

class ReadFailed(Exception):
    """A read of a checked file failed; ``args`` are ``(type, json, errno)``, its record."""

#: What the loader keeps of a valid file: the whole file read into memory and checked there
#: (``read=True``), or the open file that was checked.
_Kept = Union[bytearray, CheckedFile]

__version__: str
#: Whether URLs can be checked (the library's remote checking is built in).
remote: bool

def check_path(path: _Path, opts: Dict[str, Any]) -> _Outcome: ...
def check_paths(paths: List[_Path], opts: Dict[str, Any]) -> List[_Outcome]: ...
def check_bytes(data: bytes, path: str, opts: Dict[str, Any]) -> _Outcome: ...
def check_index(path: _Path, opts: Dict[str, Any]) -> _Outcome: ...
def open_checked(
    path: _Path, opts: Dict[str, Any], read: bool
) -> Tuple[str, str, Optional[int], Optional[_Kept]]: ...
def open_index_checked(
    path: _Path, opts: Dict[str, Any], read: bool
) -> Tuple[str, str, Optional[int], List[Tuple[str, _Kept]]]: ...
def rules_table() -> List[Tuple[str, str, str]]: ...

# With the default feature `remote` (`remote` is then True):
def check_url(url: str, opts: Dict[str, Any]) -> _Outcome: ...
def is_url(arg: str) -> bool: ...
