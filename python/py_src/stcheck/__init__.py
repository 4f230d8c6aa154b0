"""stcheck: strict validation of safetensors files, and a strict loader.

Validation (the same verdicts, rules and offsets as the ``stcheck`` command line)::

    import stcheck
    report = stcheck.check("model.safetensors")           # a Report, valid or not
    report.valid, report.error, report.tensors, report.to_dict()
    stcheck.validate("model.safetensors", deep=True)     # raises SafetensorsError if invalid
    stcheck.check_index("model.safetensors.index.json")  # a sharded set, checked as one

Loading, with the names of ``safetensors`` (nothing is returned from an invalid file)::

    tensors = stcheck.load_file("model.safetensors")
    with stcheck.safe_open("model.safetensors", framework="numpy") as f:
        w = f.get_tensor("weight")
    tensors = stcheck.load_file("model.safetensors", framework="pt")  # torch, if installed

Scale-out over many files on Dask distributed: ``stcheck.dask``.
"""

from __future__ import annotations

from . import _native
from ._check import (
    check,
    check_index,
    check_tree,
    is_url,
    options,
    record,
    records,
    records_tree,
    validate,
)
from ._errors import (
    InvalidError,
    MalformedError,
    NotCheckedError,
    NotFoundError,
    ReadError,
    RemoteUnavailableError,
    SafetensorError,
    SafetensorsError,
)
from ._loader import load, load_file, numpy_dtype, safe_open, torch_dtype
from ._report import (
    DeepReport,
    DtypeTotal,
    Finding,
    IndexReport,
    MissingShard,
    NonFinite,
    Report,
    TensorInfo,
)

__version__: str = _native.__version__

#: Every rule of SPEC.md: rule ID -> (kind, severity), e.g. ``"LAYOUT-GAP": ("invalid", "error")``.
RULES = {rule: (kind, severity) for rule, kind, severity in _native.rules_table()}

__all__ = [
    "__version__",
    "RULES",
    "check",
    "check_index",
    "check_tree",
    "validate",
    "record",
    "records",
    "records_tree",
    "options",
    "is_url",
    "load_file",
    "load",
    "safe_open",
    "numpy_dtype",
    "torch_dtype",
    "Report",
    "IndexReport",
    "MissingShard",
    "Finding",
    "TensorInfo",
    "DtypeTotal",
    "DeepReport",
    "NonFinite",
    "SafetensorsError",
    "SafetensorError",
    "MalformedError",
    "InvalidError",
    "ReadError",
    "NotFoundError",
    "NotCheckedError",
    "RemoteUnavailableError",
]
