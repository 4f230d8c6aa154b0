"""``safetensors.numpy``'s loading functions, strict: ``from stcheck.numpy import load_file``."""

from ._loader import load, load_file

__all__ = ["load", "load_file"]
