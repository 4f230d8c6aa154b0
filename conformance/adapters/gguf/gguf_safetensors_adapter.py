#!/usr/bin/env python3
"""Conformance adapter: the safetensors reader of the `gguf` package (llama.cpp's Python
package), `gguf.utility.SafetensorsLocal`, which llama.cpp's converters use to read model
files by byte ranges.

Usage: gguf_safetensors_adapter.py FILE | gguf_safetensors_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and ../python/stconform_protocol.py)

`SafetensorsLocal(FILE)` parses the header and gives, per tensor, its dtype (the header's
string), shape and byte range; each tensor is reported with the SHA-256 of the bytes of that
range as `LocalTensor.mmap_bytes()` maps them. The reader drops `__metadata__`, so no
metadata is reported (the runner does not compare it).

Refusals (exit 1): the reader raises `ValueError` itself for a header longer than the file
("Could not read complete metadata") and for JSON it cannot parse ("Failed to parse
safetensors metadata"); those two, and `UnicodeDecodeError` from decoding the header, are its
refusals. Any other error (a `KeyError` for a missing field, a `TypeError` on a field of the
wrong type, NumPy's errors while mapping a range) is a crash (exit 3): see PROTOCOL.md,
"Mapping a library's errors".
"""
import hashlib
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stconform_protocol as protocol  # noqa: E402
from gguf.utility import SafetensorsLocal  # noqa: E402

OWN_MESSAGES = ("Could not read complete metadata", "Failed to parse safetensors metadata")


class Refused(Exception):
    """The reader's own ValueError: a refusal."""


def read(path, kind):
    if kind == "index":
        raise protocol.Unsupported("SafetensorsLocal reads one file, not a sharded set")
    try:
        reader = SafetensorsLocal(Path(path))
    except ValueError as e:
        if str(e).startswith(OWN_MESSAGES):
            raise Refused(str(e)) from e
        raise
    tensors = []
    with reader as found:
        for name, t in found.items():
            data = bytes(t.mmap_bytes()) if t.data_range.size else b""
            tensors.append({
                "name": name,
                "dtype": t.dtype,
                "shape": [str(d) for d in t.shape],
                "sha256": hashlib.sha256(data).hexdigest(),
            })
    return {"tensors": tensors}


if __name__ == "__main__":
    sys.exit(protocol.run(read, (Refused, UnicodeDecodeError)))
