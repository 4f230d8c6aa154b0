#!/usr/bin/env python3
"""Probe the Python readers of corpus/readers.json on every file strict accepts.

Usage:
  probe_python.py --out DIR [--corpus DIR] [--large DIR] [--cases FILE] [--only ID...]

Readers (ids of corpus/readers.json):
  mlx           mlx.core.load
  mlx-numpy     numpy.array() of each array mlx.core.load returns (after MLX's own read)
  python-numpy  safetensors safe_open(framework="numpy").get_tensor, and safetensors.numpy.load

For each case of corpus/manifest.json that strict accepts (and, with --large, the large cases
generated into DIR, plus the large 'file' cases of conformance/probes/cases.json), each reader
loads the file in a worker process and the result is compared with the manifest's expected
tensors (names, dtypes, shapes, SHA-256 of the bytes):

  reads    every tensor as the file holds it
  misread  loaded without an error, but a name, dtype, shape or the bytes differ
  refuse   the reader raised an exception
  crash    the worker process died (signal or abort), or MemoryError
  timeout  no answer within --timeout seconds

Writes DIR/<reader>.json: {"reader", "version", "results": {case id: {"outcome", "detail"}}}.
Exit status 0 when every case was probed, 2 on a usage or I/O error.
"""
import argparse
import hashlib
import json
import os
import selectors
import subprocess
import sys
import time

READERS = ("mlx", "mlx-numpy", "python-numpy")

# MLX's (and NumPy's) dtype names mapped to the header's: the MLX adapter's table.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adapters", "mlx"))
from mlx_load_adapter import NAMES  # noqa: E402


# ---------------------------------------------------------------------------------------------
# Worker: reads "READER<TAB>PATH" lines, answers one JSON line per job.

def mlx_read(path):
    import mlx.core as mx
    import numpy as np

    arrays = mx.load(path)
    out = []
    for name, a in arrays.items():
        kind = str(a.dtype).rsplit(".", 1)[-1]
        shape = [int(d) for d in a.shape]
        entry = {"name": name, "dtype": NAMES.get(kind, kind), "shape": [str(d) for d in shape]}
        if all(d >= 0 for d in shape):
            # The bytes through MLX itself: flattened and viewed as bytes, so NumPy's rank and
            # dtype limits play no part.
            raw = a.reshape(-1).view(mx.uint8)
            entry["sha256"] = hashlib.sha256(np.asarray(raw).tobytes()).hexdigest()
        out.append(entry)
    return out, arrays


def numpy_entry(name, b):
    import numpy as np

    return {
        "name": name,
        "dtype": NAMES.get(b.dtype.name, b.dtype.name),
        "shape": [str(d) for d in b.shape],
        "sha256": hashlib.sha256(np.ascontiguousarray(b).tobytes()).hexdigest(),
    }


def run_job(reader, path):
    if reader == "mlx":
        tensors, _ = mlx_read(path)
        return {"tensors": tensors}
    if reader == "mlx-numpy":
        import numpy as np

        tensors, arrays = mlx_read(path)
        answer = {"mlx": tensors}
        # Flush before converting: numpy.array() of some arrays aborts the process.
        converted = []
        try:
            for name, a in arrays.items():
                converted.append(numpy_entry(name, np.array(a)))
        except Exception as e:  # noqa: BLE001 - the conversion's refusal
            answer["numpy_error"] = f"{type(e).__name__}: {e}"
        else:
            answer["tensors"] = converted
        return answer
    if reader == "python-numpy":
        from safetensors import safe_open

        tensors = []
        with safe_open(path, framework="numpy") as f:
            for name in f.keys():
                tensors.append(numpy_entry(name, f.get_tensor(name)))
        answer = {"tensors": tensors}
        if os.path.getsize(path) <= 200_000_000:
            from safetensors.numpy import load

            try:
                loaded = load(open(path, "rb").read())
                answer["load_tensors"] = [numpy_entry(n, b) for n, b in loaded.items()]
            except Exception as e:  # noqa: BLE001
                answer["load_error"] = f"{type(e).__name__}: {e}"
        return answer
    raise ValueError(f"unknown reader {reader}")


def worker():
    for line in sys.stdin:
        reader, path = line.rstrip("\n").split("\t", 1)
        try:
            answer = run_job(reader, path)
        except MemoryError as e:
            answer = {"crash": f"MemoryError: {e}"}
        except Exception as e:  # noqa: BLE001 - the reader's refusal
            answer = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


# ---------------------------------------------------------------------------------------------
# Driver.

def expected_tensors(expected):
    """The manifest's expected tensors, or only their count where the manifest leaves the list
    out (files with no tensors, or with more than 1,000)."""
    if "tensors" in expected:
        return expected["tensors"]
    return int(expected["tensor_count"])


def compare(got, expected):
    """'reads', or a description of the first difference. `expected` is a list of tensors, or a
    count when only the count is known."""
    have = {}
    for t in got:
        if t["name"] in have:
            return f"tensor {t['name']!r} returned twice"
        have[t["name"]] = t
    if isinstance(expected, int):
        if len(have) != expected:
            return f"{len(have)} tensors, the file has {expected}"
        return "reads"
    want = {t["name"]: t for t in expected}
    if set(have) != set(want):
        lost = sorted(set(want) - set(have))[:3]
        extra = sorted(set(have) - set(want))[:3]
        return f"tensor names differ: missing {lost}, unexpected {extra}"
    for name, w in want.items():
        h = have[name]
        if h["dtype"] != w["dtype"]:
            return f"tensor {name!r}: dtype {h['dtype']}, the file says {w['dtype']}"
        if h["shape"] != w["shape"]:
            return f"tensor {name!r}: shape {short(h['shape'])}, the file says {short(w['shape'])}"
        if "sha256" in h and h["sha256"] != w["sha256"]:
            return f"tensor {name!r}: different bytes"
        if "sha256" not in h:
            return f"tensor {name!r}: bytes not readable"
    return "reads"


def short(shape):
    return shape if len(shape) <= 6 else shape[:3] + ["..."] + shape[-2:] + [f"({len(shape)} dims)"]


def outcome(reader, answer, expected):
    """(outcome, detail) for one reader's answer."""
    if "crash" in answer:
        return "crash", answer["crash"]
    if "error" in answer:
        return "refuse", answer["error"]
    if reader == "mlx-numpy":
        first = compare(answer["mlx"], expected)
        if first != "reads":
            return "misread", "mlx.core.load: " + first
        if "numpy_error" in answer:
            return "refuse", answer["numpy_error"]
    result = compare(answer["tensors"], expected)
    if result != "reads":
        return "misread", result
    if reader == "python-numpy" and "load_error" in answer:
        return "refuse", "safe_open reads it, safetensors.numpy.load refuses: " + answer["load_error"]
    if reader == "python-numpy" and "load_tensors" in answer:
        second = compare(answer["load_tensors"], expected)
        if second != "reads":
            return "misread", "safetensors.numpy.load: " + second
    return "reads", ""


class Worker:
    def __init__(self, timeout):
        self.timeout = timeout
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1,
        )
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)

    def ask(self, reader, path):
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.proc.stdin.write(f"{reader}\t{path}\n")
        self.proc.stdin.flush()
        if not self.sel.select(self.timeout):
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return {"timeout": f"no answer in {self.timeout} s"}
        line = self.proc.stdout.readline()
        if line:
            return json.loads(line)
        # The worker died while reading this file.
        code = self.proc.wait()
        err = self.proc.stderr.read().strip().splitlines()
        self.proc = None
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        return {"crash": f"process {how}" + (f": {err[-1]}" if err else "")}

    def stop(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()


def sparse_file(path, header, data_length):
    h = header.encode()
    h += b" " * (-len(h) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        f.truncate(8 + len(h) + data_length)


def zeros_sha256(n):
    h = hashlib.sha256()
    chunk = bytes(1 << 20)
    while n:
        k = min(n, len(chunk))
        h.update(chunk[:k])
        n -= k
    return h.hexdigest()


def jobs(args):
    manifest = json.load(open(os.path.join(args.corpus, "manifest.json")))
    out = []
    for c in manifest["cases"]:
        # Sharded sets (kind "index") name an index, not a safetensors file: not probed here.
        if "expected" in c and c.get("kind") != "index":
            out.append((c["id"], os.path.join(args.corpus, c["path"]), expected_tensors(c["expected"])))
    if args.large:
        for c in manifest["large"]:
            path = os.path.join(args.large, c["path"])
            if "expected" in c:
                if not os.path.exists(path):
                    sys.exit(f"probe_python: {path} missing: generate the large cases first")
                out.append((c["id"], path, expected_tensors(c["expected"])))
        for c in json.load(open(args.cases))["cases"]:
            if "file" in c and c.get("large"):
                f = c["file"]
                path = os.path.join(args.out, "files", c["id"] + ".safetensors")
                if "zero_size_tensors" in f:
                    entry = {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}
                    count = int(f["zero_size_tensors"])
                    text = json.dumps({f"t{i}": entry for i in range(count)}, separators=(",", ":"))
                    f = {"header": text, "data_length": "0"}
                n = int(f["data_length"])
                sparse_file(path, f["header"], n)
                header = json.loads(f["header"])
                expected = [{"name": k, "dtype": v["dtype"], "shape": [str(d) for d in v["shape"]],
                             "sha256": zeros_sha256(v["data_offsets"][1] - v["data_offsets"][0])}
                            for k, v in header.items() if k != "__metadata__"]
                out.append((c["id"], path, expected))
    if args.only:
        out = [j for j in out if j[0] in args.only]
    return out


def versions():
    import importlib.metadata as m

    def v(p):
        try:
            return m.version(p)
        except m.PackageNotFoundError:
            return None
    return {"mlx": v("mlx"), "mlx-numpy": v("numpy"), "python-numpy": v("safetensors"),
            "numpy": v("numpy"), "mlx-cpu": v("mlx-cpu"), "python": sys.version.split()[0]}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--corpus", default=os.path.join(root, "corpus"))
    ap.add_argument("--large")
    ap.add_argument("--cases", default=os.path.join(here, "cases.json"))
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    if args.worker:
        worker()
        return 0
    if not args.out:
        ap.error("--out is required")
    os.makedirs(args.out, exist_ok=True)
    todo = jobs(args)
    vers = versions()
    w = Worker(args.timeout)
    results = {r: {} for r in READERS}
    start = time.time()
    for case_id, path, expected in todo:
        for reader in READERS:
            answer = w.ask(reader, path)
            if "timeout" in answer:
                results[reader][case_id] = {"outcome": "timeout", "detail": answer["timeout"]}
                continue
            o, detail = outcome(reader, answer, expected)
            results[reader][case_id] = {"outcome": o, "detail": detail[:300]}
    w.stop()
    for reader in READERS:
        with open(os.path.join(args.out, f"{reader}.json"), "w") as f:
            json.dump({"reader": reader, "version": vers[reader], "runtime": vers,
                       "results": results[reader]}, f, indent=1, sort_keys=True)
            f.write("\n")
        counts = {}
        for r in results[reader].values():
            counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
        print(f"{reader} {vers[reader]}: {len(results[reader])} cases {counts}")
    print(f"probe_python: {len(todo)} files in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
