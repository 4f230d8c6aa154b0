#!/usr/bin/env python3
"""Conformance adapter: `reminis` 0.34.0 (its own pure-Python safetensors reader and writer;
it depends on numpy, gguf and zstandard, not on the `safetensors` package), through
`reminis.safetensors_io.safetensors_to_sqlite`, the converter behind `reminis convert`: it
reads a file, or a sharded set through its index, into a SQLite model database.

Usage: reminis_adapter.py FILE | reminis_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and ../python/stconform_protocol.py)

Index mode: the index's path is given to the converter, which follows `weight_map` the way it
loads any sharded model. Each tensor is then read back from the database: its name, dtype, the
logical shape (the database stores it reversed, as GGUF does) and the SHA-256 of the stored
bytes; a single file's `__metadata__` is what the converter kept (`st.KEY` rows). The database
lives in a temporary directory removed after each case.

A dtype of the format that reminis does not have (F4, F6, the FNUZ and E8M0 F8 types, C64) is
"unsupported" (exit 4): a file's header dtypes are checked against `reminis.dtypes` first (the
converter itself raises the same `ValueError` for them as for a misspelled dtype).

Refusals (exit 1): `ValueError` (the converter's own checks: a short file, a header length out
of range, an unknown dtype, a span that differs from shape x dtype, a shard that ends early;
`json.JSONDecodeError` and `UnicodeDecodeError` are `ValueError`s) and `FileNotFoundError` (a
shard the index names is not there). Anything else is a crash (exit 3).
"""
import hashlib
import json
import os
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stconform_protocol as protocol  # noqa: E402
from reminis.dtypes import SAFETENSORS_DTYPES  # noqa: E402
from reminis.safetensors_io import safetensors_to_sqlite  # noqa: E402


def read(path, kind):
    if kind != "index":
        protocol.require_dtypes(path, SAFETENSORS_DTYPES, "reminis")
    with tempfile.TemporaryDirectory(prefix="stconform-reminis-") as work:
        db = safetensors_to_sqlite(path, os.path.join(work, "model.db"), verbose=False)
        conn = sqlite3.connect(db)
        try:
            rows = conn.execute("SELECT name, shape, dtype, data FROM tensors ORDER BY id").fetchall()
            meta = dict(conn.execute("SELECT key, value FROM model_meta WHERE key LIKE 'st.%'"))
        finally:
            conn.close()
    tensors = [{
        "name": name,
        "dtype": dtype,
        "shape": [str(d) for d in json.loads(shape)[::-1]],
        "sha256": hashlib.sha256(bytes(data)).hexdigest(),
    } for name, shape, dtype, data in rows]
    metadata = {k[len("st."):]: v for k, v in meta.items()} if kind != "index" else None
    return {"tensors": tensors, "metadata": metadata or None}


if __name__ == "__main__":
    sys.exit(protocol.run(read, (ValueError, FileNotFoundError)))
