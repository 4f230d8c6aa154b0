#!/usr/bin/env python3
"""Writer adapter: MLX, `mlx.core.save_safetensors` (packages `mlx` and `mlx-cpu` on Linux).

Usage: mlx_writer.py TASK.json OUT.safetensors   (see conformance/WRITER-PROTOCOL.md)

Each tensor becomes an `mx.array` of the tensor's dtype made from a NumPy array of its bytes
(BF16 through a uint16 array viewed as bfloat16). MLX has no 8-bit, 6-bit or 4-bit float, an array cannot
disagree with its shape, and a dict cannot hold two tensors of one name: such tasks cannot be
expressed (exit 77). The metadata is passed as the task gives it.

Exit codes: see writer_common.py (0 wrote, 1 refused, 2 usage, 3 crash, 77 unsupported).
A crash of the native code ends the process by a signal.
"""
import sys

from writer_common import main, numpy_arrays

DTYPES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16",
    "U32": "uint32", "I32": "int32", "U64": "uint64", "I64": "int64",
    "F16": "float16", "F32": "float32", "F64": "float64", "C64": "complex64",
    "BF16": "uint16",  # viewed as bfloat16 below
}


def write(tensors, metadata, out):
    import mlx.core as mx

    arrays = numpy_arrays(tensors, DTYPES)
    for t in tensors:
        # The MLX dtype is given explicitly: mx.array() alone turns float64 into float32.
        kind = "uint16" if t.dtype == "BF16" else DTYPES[t.dtype]
        a = mx.array(arrays[t.name], dtype=getattr(mx, "bool_" if kind == "bool" else kind))
        arrays[t.name] = a.view(mx.bfloat16) if t.dtype == "BF16" else a
    mx.save_safetensors(out, arrays, metadata=metadata)


if __name__ == "__main__":
    sys.exit(main("mlx_writer.py", write, sys.argv[1:]))
