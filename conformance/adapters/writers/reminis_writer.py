#!/usr/bin/env python3
"""Writer adapter: `reminis` 0.34.0 (its own safetensors writer, not the `safetensors`
package), through its public route from arrays to a file: `reminis.track.state_dict_to_sqlite`
(a dict of NumPy arrays into a model database) and `reminis.safetensors_io.sqlite_to_safetensors`
(the database out as one safetensors file, what `reminis export --format safetensors` does).

Usage: reminis_writer.py TASK.json OUT.safetensors   (see WRITER-PROTOCOL.md)

What the API cannot be given (exit 77): a dtype without a NumPy type reminis stores (it takes
F64, F32, F16, I64, I32, I16, I8, U8 and BOOL from NumPy), bytes that do not match the shape,
two tensors of one name (a dict), and metadata (the route has no way to pass it). The writer
adds its own metadata keys (`format`, `reminis_version`) to every file.

Refusals (exit 1): `ValueError`, what both functions raise for what they refuse. Anything else
is a crash (exit 3). The database lives in a temporary directory removed afterwards.
"""
import os
import sys
import tempfile

from writer_common import Unsupported, main, numpy_arrays

DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "I64": "int64",
          "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


def write(tensors, metadata, out):
    from reminis.safetensors_io import sqlite_to_safetensors
    from reminis.track import state_dict_to_sqlite

    if metadata is not None:
        raise Unsupported("reminis's route from arrays to a file takes no metadata")
    arrays = numpy_arrays(tensors, DTYPES)
    with tempfile.TemporaryDirectory(prefix="stwrite-reminis-") as work:
        db = state_dict_to_sqlite(arrays, os.path.join(work, "model.db"))
        sqlite_to_safetensors(db, out, verbose=False)


if __name__ == "__main__":
    sys.exit(main("reminis_writer.py", write, sys.argv[1:], refusals=(ValueError,)))
