#!/usr/bin/env python3
import json, sys

def main(task_path, out):
    try:
        task = json.load(open(task_path, "rb"))
        data = open(task["data_file"], "rb").read()
    except (OSError, ValueError) as e:
        print(e, file=sys.stderr)
        return 2                                    # not a verdict: the adapter failed
    import numpy as np
    from safetensors.numpy import save_file
    kinds = {"U8": "uint8", "I32": "int32", "F16": "float16", "F32": "float32"}
    arrays = {}
    for t in task["tensors"]:
        shape, start = [int(d) for d in t["shape"]], int(t["offset"])
        raw = data[start:start + int(t["length"])]
        size = int(np.prod(shape, dtype=object)) * np.dtype(kinds.get(t["dtype"], "V1")).itemsize
        if t["dtype"] not in kinds or t["name"] in arrays or size != len(raw):
            print(f"unsupported: cannot hand {t['name']!r} to save_file", file=sys.stderr)
            return 77                               # the API cannot express this task
        arrays[t["name"]] = np.frombuffer(raw, kinds[t["dtype"]]).reshape(shape)
    try:
        save_file(arrays, out, metadata=task.get("metadata"))
    except Exception as e:                          # the library refused the task
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except BaseException as e:                      # a Rust panic (PanicException): a crash
        print(f"crash: {e!r}", file=sys.stderr)
        return 3
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
