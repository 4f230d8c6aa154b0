#!/usr/bin/env python3
"""Conformance adapter: a loader of sharded checkpoints that globs `*.safetensors`, as many
conversion scripts and tools do instead of reading the index:

    state_dict = {}
    for f in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        state_dict.update(safetensors.numpy.load(open(f, "rb").read()))

Usage: glob_shards_adapter.py FILE | glob_shards_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md)

For a sharded set (kind `index`) it ignores the index except for its directory, loads every
`*.safetensors` file there in sorted order with `safetensors.deserialize` (a later file's
tensor replaces an earlier one of the same name), and reports each tensor with its shard. A
single file is loaded the same way. Refusals (exit 1): `SafetensorError` only.
"""
import glob
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stconform_protocol as protocol  # noqa: E402
from safetensors import SafetensorError, deserialize  # noqa: E402


def read(path, kind):
    files = sorted(glob.glob(os.path.join(os.path.dirname(path), "*.safetensors"))) if kind == "index" else [path]
    loaded = {}
    for file in files:
        with open(file, "rb") as f:
            for name, info in deserialize(f.read()):
                loaded[name] = {
                    "name": name,
                    "dtype": info["dtype"],
                    "shape": [str(d) for d in info["shape"]],
                    "sha256": hashlib.sha256(bytes(info["data"])).hexdigest(),
                    **({"shard": os.path.basename(file)} if kind == "index" else {}),
                }
    return {"tensors": list(loaded.values())}


if __name__ == "__main__":
    sys.exit(protocol.run(read, (SafetensorError,)))
