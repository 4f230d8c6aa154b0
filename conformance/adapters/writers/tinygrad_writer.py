#!/usr/bin/env python3
"""Writer adapter: tinygrad's `tinygrad.nn.state.safe_save`.

Usage: tinygrad_writer.py TASK.json OUT.safetensors   (see conformance/WRITER-PROTOCOL.md)

Each tensor becomes a tinygrad `Tensor` made from its bytes (`Tensor(bytes)`, uint8, then
`bitcast` to the tensor's dtype and `reshape`d to its shape) on tinygrad's default device
(CPU, which compiles its kernels with clang: `conformance/setup-tinygrad.sh` installs it),
and `safe_save(tensors, OUT, metadata)` writes them. A dtype missing from tinygrad's
`safe_dtypes`, bytes that cannot be a tensor of the shape, and two tensors of one name (a
dict holds one) cannot be expressed (exit 77). The metadata is passed as the task gives it.

Refusals (exit 1): tinygrad has no error type; its own refusals are the `ValueError`s
`safe_save` raises ("safe_save requires concrete dtypes") and `TypeError` from `json.dumps`
on metadata it cannot encode. Any other exception (an `AssertionError`, an `IndexError`, a
`RuntimeError` from inside tinygrad) is a crash (exit 3), as PROTOCOL.md's "Mapping a
library's errors" says for readers.
"""
import sys

from writer_common import Unsupported, main, require_shape_fits


def write(tensors, metadata, out):
    from tinygrad import Tensor, dtypes
    from tinygrad.nn.state import safe_dtypes, safe_save

    state = {}
    for t in tensors:
        if t.dtype not in safe_dtypes:
            raise Unsupported(f"tinygrad has no dtype {t.dtype}")
        dtype = safe_dtypes[t.dtype]
        require_shape_fits(t, dtype.itemsize, "a tensor", t.dtype)
        if t.name in state:
            raise Unsupported(f"a dict cannot hold two tensors named {t.name!r}")
        state[t.name] = Tensor(t.data, dtype=dtypes.uint8).bitcast(dtype).reshape(t.shape)
    safe_save(state, out, metadata)


if __name__ == "__main__":
    sys.exit(main("tinygrad_writer.py", write, sys.argv[1:], refusals=(ValueError, TypeError)))
