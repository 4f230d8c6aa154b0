#!/usr/bin/env python3
"""The smallest useful adapter, protocol v1 (exit codes only) and the standard library only:
a plain reader of the format written from its description, for trying the runner where
nothing else is installed (the wheel's CI test runs it with no Rust and no packages).

Usage: minimal_adapter.py FILE    exit 0 and the tensors as JSON, exit 1 (rejected), or 3
(a crash: deep nesting exhausts Python's recursion; an uncaught exception would exit 1, which
the protocol reads as a refusal, so anything not caught on purpose must not escape)

It checks the frame (8-byte length, a header inside the file, UTF-8 JSON object), each entry
(dtype of a known size, integer shape and offsets, bytes matching the shape) and the layout
(entries cover the data region in order without gaps or overlaps). A real adapter reads with
the implementation under test instead.

MINIMAL_ADAPTER_RULE=RULE makes every rejection name RULE (protocol v2's reason): a
deliberately wrong-reason adapter, for testing that WRONG_RULE shows.
"""
import hashlib
import json
import os
import struct
import sys

SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "I16": 2,
         "F16": 2, "BF16": 2, "U32": 4, "I32": 4, "F32": 4, "U64": 8, "I64": 8, "F64": 8}


class Bad(Exception):
    pass


def read(blob):
    if len(blob) < 8:
        raise Bad("shorter than the length field")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise Bad("header past the end")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        raise Bad("header is not an object")
    data = blob[8 + n:]
    meta = header.pop("__metadata__", None)
    tensors, spans = [], []
    for name, t in header.items():
        if not isinstance(t, dict) or t.get("dtype") not in SIZES:
            raise Bad(f"{name}: bad entry")
        shape, (begin, end) = t["shape"], t["data_offsets"]
        count = 1
        for d in shape:
            count *= d
        if end < begin or end - begin != count * SIZES[t["dtype"]] or end > len(data):
            raise Bad(f"{name}: size")
        spans.append((begin, end))
        tensors.append({"name": name, "dtype": t["dtype"], "shape": [str(d) for d in shape],
                        "sha256": hashlib.sha256(data[begin:end]).hexdigest()})
    at = 0
    for begin, end in sorted(spans):
        if begin != at:
            raise Bad("gap or overlap")
        at = end
    if at != len(data):
        raise Bad("trailing bytes")
    return {"tensors": tensors, "metadata": meta}


def main(path):
    try:
        blob = open(path, "rb").read()
    except OSError as e:
        print(e, file=sys.stderr)
        return 2  # not a verdict: the file cannot be read
    try:
        answer = read(blob)
    except RecursionError as e:  # not a refusal: the reader gave up (exit 1 would hide it)
        print(f"RecursionError: {e}", file=sys.stderr)
        return 3
    except (Bad, ValueError, KeyError, TypeError) as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        rule = os.environ.get("MINIMAL_ADAPTER_RULE")
        if rule:
            print(json.dumps({"rule": rule}))
        return 1
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
