#!/usr/bin/env python3
"""Conformance adapter: tinygrad's pure-Python reader, `tinygrad.nn.state.safe_load`.

Usage: tinygrad_load_adapter.py FILE | tinygrad_load_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and ../python/stconform_protocol.py)

`safe_load(FILE)` gives a dict of tensors on tinygrad's DISK device; each is reported with
its dtype (tinygrad's `safe_dtypes` mapped back to the header's name), shape, and the SHA-256
of its bytes as `Tensor.bitcast(dtypes.uint8).data()` returns them (tinygrad's DISK device
reads them; no compiler is needed). tinygrad reads `__metadata__` only through
`safe_load_metadata`, which returns the whole parsed header: its `__metadata__` member is
reported as the metadata when it is a map of strings.

A dtype missing from `safe_dtypes` is "unsupported" (exit 4), checked on the header as
`safe_load_metadata` parses it, before any tensor is made.

Refusals (exit 1): tinygrad has no error type of its own, so only the errors of the parsing
steps themselves count as a refusal: `json.JSONDecodeError` from the header's JSON and
`UnicodeDecodeError` from its decoding. Anything else (an `IndexError`, a `KeyError`, an
`AssertionError` or a `RuntimeError` from inside tinygrad) is a crash (exit 3): see
PROTOCOL.md, "Mapping a library's errors".
"""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stconform_protocol as protocol  # noqa: E402
from tinygrad import dtypes  # noqa: E402
from tinygrad.nn.state import safe_dtypes, safe_load, safe_load_metadata  # noqa: E402

NAMES = {v: k for k, v in safe_dtypes.items()}


def read(path, kind):
    if kind == "index":
        raise protocol.Unsupported("safe_load reads one file, not a sharded set")
    _, _, header = safe_load_metadata(path)
    if isinstance(header, dict):
        for name, info in header.items():
            if name != "__metadata__" and isinstance(info, dict) and info.get("dtype") not in safe_dtypes:
                raise protocol.Unsupported(f"tinygrad has no dtype {info.get('dtype')!r}")
    state = safe_load(path)
    tensors = []
    for name, t in state.items():
        # The bytes as uint8 (`data()` has no buffer format for BF16 or the F8 types).
        data = bytes(t.bitcast(dtypes.uint8).data()) if t.numel() else b""
        tensors.append({
            "name": name,
            "dtype": NAMES.get(t.dtype, str(t.dtype)),
            "shape": [str(d) for d in t.shape],
            "sha256": hashlib.sha256(data).hexdigest(),
        })
    answer = {"tensors": tensors}
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    if meta is None or (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        answer["metadata"] = meta
    return answer


if __name__ == "__main__":
    sys.exit(protocol.run(read, (json.JSONDecodeError, UnicodeDecodeError)))
