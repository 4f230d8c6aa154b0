#!/usr/bin/env python3
"""Writer adapter: `pure_safetensors`, through `SafeTensors(OUT, "w+")` and its buffer view.

Usage: pure_safetensors_writer.py TASK.json OUT.safetensors   (see WRITER-PROTOCOL.md)

The tensors are given as `(bytes, dtype, shape)` to `SafeTensors.as_buffer().update(...)`,
the library's own way to write raw tensor bytes, and the metadata is assigned to
`SafeTensors.metadata` as the task gives it. A dtype the library does not have and two
tensors of one name (its view is a mapping) cannot be expressed (exit 77).

Refusals (exit 1): the library's `SafeTensorError`, marshmallow's `ValidationError` from its
schema of the header, and the `ValueError` / `TypeError` its copy of the bytes raises when
they do not fit the tensor. Anything else is a crash (exit 3).
"""
import sys

from writer_common import Unsupported, main


def write(tensors, metadata, out):
    from pure_safetensors import SafeTensors
    from pure_safetensors.safetensors import dtypes

    items = {}
    for t in tensors:
        if t.dtype not in dtypes:
            raise Unsupported(f"pure_safetensors has no dtype {t.dtype}")
        if t.name in items:
            raise Unsupported(f"a mapping cannot hold two tensors named {t.name!r}")
        items[t.name] = (t.data, dtypes[t.dtype], tuple(t.shape))
    with SafeTensors(out, "w+") as sf:
        if metadata is not None:
            sf.metadata = metadata
        sf.as_buffer().update(items)


if __name__ == "__main__":
    import marshmallow
    from pure_safetensors.exc import SafeTensorError

    sys.exit(main("pure_safetensors_writer.py", write, sys.argv[1:],
                  refusals=(SafeTensorError, marshmallow.ValidationError, ValueError, TypeError)))
