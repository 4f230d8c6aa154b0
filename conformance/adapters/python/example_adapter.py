#!/usr/bin/env python3
import hashlib, json, sys

def main(path):
    try:
        data = open(path, "rb").read()
    except OSError as e:
        print(e, file=sys.stderr)
        return 2                                    # not a verdict: cannot read the file
    from safetensors import deserialize
    try:
        loaded = deserialize(data)
    except Exception as e:                          # the library refused the file
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except BaseException as e:                      # a Rust panic (PanicException): a crash
        print(f"crash: {e!r}", file=sys.stderr)
        return 3
    tensors = [{"name": name, "dtype": t["dtype"],
                "shape": [str(d) for d in t["shape"]],
                "sha256": hashlib.sha256(bytes(t["data"])).hexdigest()}
               for name, t in loaded]
    print(json.dumps({"tensors": tensors}))
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
