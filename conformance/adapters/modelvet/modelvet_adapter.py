#!/usr/bin/env python3
"""Conformance adapter: `modelvet` 0.1.1, a verify-before-load validator written in C (its
Python package is a ctypes binding over the vendored C source, built at install time; it does
not use the Rust `safetensors` core), through `modelvet.verify_path(FILE, "safetensors")`.

Usage: modelvet_adapter.py FILE | modelvet_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and ../python/stconform_protocol.py)

modelvet gives a verdict and a violation code, never tensors: an accept is a verdict-only
answer (`"tensors": null`, judged on the verdict alone). A REJECT verdict is a refusal; its
message is the violation's name and offset. No SPEC rule is named: modelvet's codes do not map
one to one onto SPEC's rules (one "data extent" code covers truncated and trailing data, one
"contiguity" code covers gaps and overlaps), so its rejections are "no reason given".
`ModelvetError` (a missing library, an arena too small for the file) is not a verdict: a crash.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stconform_protocol as protocol  # noqa: E402
import modelvet  # noqa: E402


class Refused(Exception):
    """modelvet's REJECT verdict."""


def read(path, kind):
    if kind == "index":
        raise protocol.Unsupported("modelvet verifies one file, not a sharded set")
    report = modelvet.verify_path(path, "safetensors")
    if not report.accepted:
        raise Refused(f"{report.violation_name} at offset {report.offset}")
    return {"verdict": "accept", "tensors": None}


if __name__ == "__main__":
    sys.exit(protocol.run(read, (Refused,)))
