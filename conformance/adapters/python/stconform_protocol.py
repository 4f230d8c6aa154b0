"""The adapter side of the stcheck conformance protocol, v2 (conformance/PROTOCOL.md).

An adapter gives `run` a function `read(path, kind)` that returns the accepting answer (a dict
with "tensors", and optionally "metadata", "warnings") and the exception classes that are its
implementation's deliberate refusals. `run` then speaks both modes:

- one-shot: `adapter.py FILE` prints the answer and exits 0; a refusal prints
  {"message": ...} and exits 1; `Unsupported` exits 4; anything else is a crash (exit 3);
- persistent: `adapter.py --persistent` answers one JSON request line per case on stdin with
  one JSON reply line on stdout, until stdin closes.
"""
import json
import os
import sys

# Imported here, at start-up, which the runner allows for, and not on the first float case: on
# a busy machine importing NumPy and ml_dtypes takes seconds, and a lazy import made later
# cases time out.
try:
    import ml_dtypes
    import numpy as np
except ImportError:  # values are then not reported
    ml_dtypes = np = None


class Unsupported(Exception):
    """The implementation does not support what the file needs (e.g. a dtype)."""


def _answer(read, refusals, path, kind):
    """(status, payload): status is accept, reject, unsupported or crash."""
    try:
        return "accept", read(path, kind)
    except Unsupported as e:
        return "unsupported", {"message": str(e)}
    except MemoryError as e:
        return "crash", {"message": f"MemoryError: {e}"}
    except refusals as e:  # the implementation refused the file
        return "reject", {"message": f"{type(e).__name__}: {e}"}
    except BaseException as e:  # a bug, a Rust panic (PanicException), a native error
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return "crash", {"message": f"{type(e).__name__}: {e}"}


def run(read, refusals):
    """Serve one case (FILE) or many (--persistent); returns the exit code."""
    args = sys.argv[1:]
    if args == ["--persistent"]:
        for line in sys.stdin:
            request = json.loads(line)
            status, payload = _answer(read, refusals, request["path"], request.get("kind", "file"))
            if status != "accept" and payload.get("message"):
                print(f"{request['id']}: {payload['message']}", file=sys.stderr, flush=True)
            reply = {"id": request["id"], "status": status, **payload}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
        return 0
    if len(args) != 1:
        print("usage: ADAPTER FILE | ADAPTER --persistent", file=sys.stderr)
        return 2
    path = args[0]
    try:
        open(path, "rb").close()
    except OSError as e:
        print(e, file=sys.stderr)
        return 2  # not a verdict: the file cannot be read
    status, payload = _answer(read, refusals, path, os.environ.get("STCONFORM_KIND", "file"))
    if status == "accept":
        print(json.dumps(payload))
        return 0
    print(payload.get("message", ""), file=sys.stderr)
    if status == "crash":
        return 3
    print(json.dumps(payload))
    return 1 if status == "reject" else 4


def index_shards(index_path):
    """The shard file names an index names, in the order it first names them."""
    with open(index_path, "rb") as f:
        weight_map = json.load(f)["weight_map"]
    return list(dict.fromkeys(weight_map.values()))


# Every dtype of the format (SPEC.md), for telling "the implementation lacks this dtype"
# (unsupported) from "this is not a dtype" (a fault of the file).
FORMAT_DTYPES = {"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F16", "BF16",
                 "F32", "F64", "C64", "F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
                 "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2"}


def header_dtypes(path):
    """The dtypes a file's header names, read the plain way (8-byte length, UTF-8 JSON);
    an empty set when the header cannot be read so (the implementation then decides)."""
    try:
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            if n > 100_000_000:
                return set()
            header = json.loads(f.read(n).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return set()
    if not isinstance(header, dict):
        return set()
    return {v.get("dtype") for k, v in header.items()
            if k != "__metadata__" and isinstance(v, dict) and isinstance(v.get("dtype"), str)}


def require_dtypes(path, supported, library):
    """Raise Unsupported when the file names a dtype of the format that `supported` lacks."""
    missing = sorted((header_dtypes(path) & FORMAT_DTYPES) - set(supported))
    if missing:
        raise Unsupported(f"{library} has no dtype {', '.join(missing)}")


FLOAT_FORMATS = {
    "F16": "float16", "F32": "float32", "F64": "float64", "BF16": "bfloat16",
    "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz", "F8_E8M0": "float8_e8m0fnu",
    "F4": "float4_e2m1fn", "F6_E2M3": "float6_e2m3fn", "F6_E3M2": "float6_e3m2fn",
}


def decode_values(dtype, data, count, limit=4096):
    """The values of a float tensor's bytes as strings (repr of the float64 value), or None
    when the dtype is not a float format, ml_dtypes is missing, or the tensor is large.
    Sub-byte formats are unpacked low bits first (the format does not fix the order; the
    corpus's value cases do not depend on it)."""
    if dtype not in FLOAT_FORMATS or count > limit or np is None:
        return None
    name = FLOAT_FORMATS[dtype]
    np_type = getattr(np, name, None) if name in ("float16", "float32", "float64") else getattr(ml_dtypes, name)
    raw = np.frombuffer(bytes(data), dtype=np.uint8)
    if dtype == "F4":
        codes = np.stack([raw & 0x0F, raw >> 4], axis=1).reshape(-1)[:count]
        array = codes.astype(np.uint8).view(np_type)
    elif dtype in ("F6_E2M3", "F6_E3M2"):
        groups = raw[: len(raw) // 3 * 3].reshape(-1, 3).astype(np.uint32)
        word = groups[:, 0] | (groups[:, 1] << 8) | (groups[:, 2] << 16)
        codes = np.stack([(word >> s) & 0x3F for s in (0, 6, 12, 18)], axis=1).reshape(-1)[:count]
        array = codes.astype(np.uint8).view(np_type)
    else:
        array = raw.view(np_type)
    return [repr(float(v)) for v in array.astype(np.float64)]
