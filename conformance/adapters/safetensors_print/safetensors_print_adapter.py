#!/usr/bin/env python3
"""Conformance adapter: `safetensors-print` 0.1.0 (pure Python; its optional `reference` extra,
which compares with the `safetensors` package, is not installed), through
`safetensors_print.reader.read_report(FILE)`.

Usage: safetensors_print_adapter.py FILE | safetensors_print_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and ../python/stconform_protocol.py)

`read_report` describes a file and lists its deviations from the format as issues of severity
error or warning. A file with an error issue is refused (its first error is the message; no
SPEC rule is named), as is `SafetensorsFormatError` (a header it cannot locate or decode).
Otherwise each tensor is reported with the header's dtype, shape and offsets and the SHA-256
of its bytes as the package's `SegmentReader` reads them; the metadata is `report.metadata`.
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stconform_protocol as protocol  # noqa: E402
from safetensors_print.reader import ERROR, SafetensorsFormatError, SegmentReader, read_report  # noqa: E402


class Refused(Exception):
    """The report lists an error."""


def read(path, kind):
    if kind == "index":
        raise protocol.Unsupported("safetensors-print reads one file, not a sharded set")
    report = read_report(path)
    errors = [i.message for i in report.issues if i.severity == ERROR]
    if errors:
        raise Refused(errors[0])
    tensors = []
    with SegmentReader(path, report.layout) as segments:
        for t in report.tensors:
            data = segments.read(t.begin, t.end - t.begin)
            tensors.append({
                "name": t.name,
                "dtype": t.dtype_name,
                "shape": [str(d) for d in t.shape],
                "data_offsets": [str(t.begin), str(t.end)],
                "sha256": hashlib.sha256(data).hexdigest(),
            })
    return {"tensors": tensors, "metadata": report.metadata or None}


if __name__ == "__main__":
    sys.exit(protocol.run(read, (SafetensorsFormatError, Refused)))
