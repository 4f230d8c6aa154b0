#!/usr/bin/env python3
"""Conformance adapter: `model-fingerprint` 0.1.1 (one pure-Python module; its own GGUF and
safetensors parsers, no dependency), through `parse_detect(FileReader(FILE))` and
`fingerprint(model, reader)`, the content hash it exists for (every tensor's bytes read).

Usage: model_fingerprint_adapter.py FILE | model_fingerprint_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and ../python/stconform_protocol.py)

Each tensor of the parsed model is reported with its dtype, shape (`dims`), offsets and the
SHA-256 of `nbytes` bytes read at the offset the library computed (`data_start + offset`),
as its own digest reads them; the metadata is the model's `metadata`. Refusals (exit 1): the
library's `ModelError`. Anything else is a crash (exit 3).
"""
import hashlib
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stconform_protocol as protocol  # noqa: E402
from model_fingerprint import FileReader, ModelError, fingerprint, parse_detect  # noqa: E402


def read(path, kind):
    if kind == "index":
        raise protocol.Unsupported("model-fingerprint reads one file, not a sharded set")
    p = Path(path)
    with FileReader(p) as reader:
        model = parse_detect(reader, p)
        fingerprint(model, reader)  # reads every tensor's bytes; ModelError when short
        tensors = []
        for t in model.tensors:
            reader.f.seek(model.data_start + t.offset)
            data = reader.f.read(t.nbytes)
            tensors.append({
                "name": t.name,
                "dtype": t.dtype,
                "shape": [str(d) for d in t.dims],
                "data_offsets": [str(t.offset), str(t.offset + t.nbytes)],
                "sha256": hashlib.sha256(data).hexdigest(),
            })
    return {"tensors": tensors, "metadata": model.metadata or None}


if __name__ == "__main__":
    sys.exit(protocol.run(read, (ModelError,)))
