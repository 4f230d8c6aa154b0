#!/usr/bin/env python3
"""Conformance adapter: fastsafetensors 0.5 (with torch, on the CPU, without GPUDirect).

Usage: fastsafetensors_adapter.py FILE | fastsafetensors_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and ../python/stconform_protocol.py). Needs the venv
of conformance/setup-fastsafetensors.sh; the persistent mode pays torch's import once.

A file is opened with `fastsafe_open([FILE], framework="pt", device="cpu", nogds=True)`, the
way its README loads weights; a sharded set (kind `index`) is opened the same way with the
list of shard files that the index's weight_map names. Each tensor is reported with its
dtype (torch's type mapped back to the header's name), shape, the SHA-256 of its bytes as
torch holds them, and its decoded values for float types.

Refusals (exit 1): the plain `Exception` fastsafetensors raises for a bad file (HeaderTooLarge,
InvalidHeaderLength, ...) and `ValueError` (its shape check, json.loads, UTF-8 decoding).
Anything else (TypeError, KeyError, RecursionError, ...) is a crash: not a deliberate refusal.
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stconform_protocol as protocol  # noqa: E402

import torch  # noqa: E402
from fastsafetensors import fastsafe_open  # noqa: E402

NAMES = {
    torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16",
    torch.uint16: "U16", torch.int32: "I32", torch.uint32: "U32", torch.int64: "I64",
    torch.uint64: "U64", torch.float16: "F16", torch.bfloat16: "BF16", torch.float32: "F32",
    torch.float64: "F64", torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2",
    torch.float8_e4m3fnuz: "F8_E4M3FNUZ", torch.float8_e5m2fnuz: "F8_E5M2FNUZ",
    torch.float8_e8m0fnu: "F8_E8M0", torch.complex64: "C64", torch.float4_e2m1fn_x2: "F4",
}


class Refused(Exception):
    pass


def describe(name, t, shard):
    # torch holds F4 as float4_e2m1fn_x2, two elements per item: its shape counts bytes.
    entry = {"name": name, "dtype": NAMES.get(t.dtype, str(t.dtype)), "shape": [str(d) for d in t.shape]}
    if t.dtype in NAMES and t.dtype != torch.float4_e2m1fn_x2:
        t = t.contiguous()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        entry["sha256"] = hashlib.sha256(raw).hexdigest()
    if t.is_floating_point() and t.dtype != torch.float4_e2m1fn_x2 and t.numel() <= 4096:
        entry["values"] = [repr(float(v)) for v in t.reshape(-1).to(torch.float64).tolist()]
    if shard is not None:
        entry["shard"] = shard
    return entry


def read(path, kind):
    try:
        if kind == "index":
            names = protocol.index_shards(path)
            files = [os.path.join(os.path.dirname(path), n) for n in names]
        else:
            names, files = [None], [path]
        with fastsafe_open(files, framework="pt", device="cpu", nogds=True) as f:
            where = {}
            if kind == "index":
                for name, file in zip(names, files):
                    where[os.path.realpath(file)] = name
            tensors = []
            for key in f.keys():
                t = f.get_tensor(key)
                tensors.append(describe(key, t, where.get(os.path.realpath(f.fb.get_filename(key)))
                                        if kind == "index" and hasattr(f.fb, "get_filename") else None))
            return {"tensors": tensors}
    except Exception as e:
        if "is not a valid DType" in str(e):
            raise protocol.Unsupported(str(e)) from e
        if type(e) is Exception or isinstance(e, ValueError):
            raise Refused(str(e)) from e
        raise


if __name__ == "__main__":
    sys.exit(protocol.run(read, (Refused,)))
