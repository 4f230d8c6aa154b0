"""``safetensors.torch``'s loading functions, strict: ``from stcheck.torch import load_file``.

torch is an optional dependency: importing this module works without it, and calling a
function raises ``ModuleNotFoundError`` naming ``torch``.
"""

from __future__ import annotations

from typing import Any, Dict, Union

from . import _loader
from ._check import PathLike

__all__ = ["load", "load_file"]


def load_file(filename: PathLike, device: Any = "cpu", **kw: Any) -> Dict[str, Any]:
    """``safetensors.torch.load_file``: every tensor of a strictly valid file (or sharded set)
    as a ``torch.Tensor`` on ``device``. Options as for ``stcheck.load_file``."""
    return _loader.load_file(filename, framework="pt", device=device, **kw)


def load(data: Union[bytes, bytearray, memoryview], **kw: Any) -> Dict[str, Any]:
    """``safetensors.torch.load``: every tensor of a strictly valid file held in memory."""
    return _loader.load(data, framework="pt", **kw)
