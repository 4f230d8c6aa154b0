#!/usr/bin/env python3
"""Writer adapter: the Python `safetensors` package, through its NumPy front end.

Usage: python_writer.py --api save_file|save TASK.json OUT.safetensors
       (see conformance/WRITER-PROTOCOL.md)

- save_file: `safetensors.numpy.save_file(arrays, OUT, metadata=...)`
- save:      `safetensors.numpy.save(arrays, metadata=...)`, the bytes written by the adapter

Each tensor becomes a NumPy array; BF16 and the 8-bit floats use the `ml_dtypes` types
(whose NumPy names are the ones the package maps to safetensors dtypes). F4 and F6 have no
NumPy type, an array cannot disagree with its shape, and a dict cannot hold two tensors of one
name: such tasks cannot be expressed (exit 77). The metadata is passed as the task gives it.

Exit codes: see writer_common.py (0 wrote, 1 refused, 2 usage, 3 crash, 77 unsupported).
"""
import sys

from writer_common import main

DTYPES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16",
    "U32": "uint32", "I32": "int32", "U64": "uint64", "I64": "int64",
    "F16": "float16", "F32": "float32", "F64": "float64", "C64": "complex64",
}
ML_DTYPES = {
    "BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
    "F8_E8M0": "float8_e8m0fnu", "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz",
}


def dtypes(tensors):
    """The NumPy dtypes; ml_dtypes only when a tensor needs it (importing it costs about a
    second of CPU, too much to pay on every task)."""
    table = dict(DTYPES)
    if not any(t.dtype in ML_DTYPES for t in tensors):
        return table
    try:
        import ml_dtypes
    except ImportError:
        return table
    for name, attr in ML_DTYPES.items():
        table[name] = getattr(ml_dtypes, attr)
    return table


def writer(api):
    def write(tensors, metadata, out):
        from safetensors.numpy import save, save_file

        from writer_common import numpy_arrays

        arrays = numpy_arrays(tensors, dtypes(tensors))
        if api == "save_file":
            save_file(arrays, out, metadata=metadata)
        else:
            data = save(arrays, metadata=metadata)
            with open(out, "wb") as f:
                f.write(data)
    return write


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "--api" or args[1] not in ("save_file", "save"):
        print("usage: python_writer.py --api save_file|save TASK.json OUT.safetensors",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(main("python_writer.py", writer(args[1]), args[2:]))
