"""Files that change under the loader: truncated, re-downloaded or rewritten in place.

A hub's shared storage rewrites files while workers load them. The loader's default must be
as safe as ``safetensors.numpy``'s: arrays that outlive any later change to the file, a
``ReadError`` (never a signal) when a file shrinks under ``safe_open``, and the deep rules
holding for exactly the bytes handed out. Whatever could kill the interpreter runs in a
child process, so a SIGBUS is a failed test (its exit status), not a dead pytest.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any, Dict, List

import numpy as np
import pytest

import stcheck

from conftest import array_base as _base, is_file_map, write_file

#: The tensors of the test files: several dtypes, spanning many pages (about 6 MiB), so that
#: touching them after a truncation reaches pages past the new end of the file.
_MAKE = """
import numpy as np
def tensors(shift=0):
    return {
        "f32": (np.arange(1 << 20, dtype=np.float32) + shift).reshape(1024, 1024),
        "i64": np.arange(1 << 18, dtype=np.int64) * 3 + shift,
        "u8": ((np.arange(1 << 20) + shift) % 251).astype(np.uint8),
        "bool": (np.arange(4099) + shift) % 3 == 0,
        "f16": np.linspace(-1, 1, 5000).astype(np.float16),
        "empty": np.zeros((0, 4), dtype=np.float32),
    }
"""
_NAMESPACE: Dict[str, Any] = {}
exec(_MAKE, _NAMESPACE)
tensors = _NAMESPACE["tensors"]


def _child(script: str, *args: str) -> subprocess.CompletedProcess:
    """Run `script` in a fresh interpreter (with `tensors()` defined); its outcome."""
    proc = subprocess.run(
        [sys.executable, "-c", _MAKE + script, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return proc


def _assert_clean(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, (
        f"exit status {proc.returncode} (a negative status is the signal that killed it)\n"
        f"stdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
    )


def _sharded(tmp_path: pathlib.Path) -> pathlib.Path:
    """A set of two shards holding `tensors()`, and its index."""
    all_tensors = tensors()
    names = sorted(all_tensors)
    parts = {"s-00001-of-00002.safetensors": names[:3], "s-00002-of-00002.safetensors": names[3:]}
    weight_map = {}
    for shard, members in parts.items():
        write_file(tmp_path / shard, {n: all_tensors[n] for n in members})
        weight_map.update({n: shard for n in members})
    index = tmp_path / "s.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return index


#: Touch every array after the file changed: every value must be the one loaded.
_TOUCH_AFTER_CHANGE = """
import os, sys
import numpy as np
import stcheck
import stcheck.numpy

target, change, loader = sys.argv[1], sys.argv[2], sys.argv[3]
files = sys.argv[4:]
load = {"stcheck": stcheck.load_file, "stcheck.numpy": stcheck.numpy.load_file}[loader]
arrays = load(target)
assert sorted(arrays) == sorted(tensors()), sorted(arrays)
for path in files:
    size = os.path.getsize(path)
    if change == "empty":          # a re-download in place starts like this
        open(path, "wb").close()
    elif change == "half":
        os.truncate(path, size // 2)
    elif change == "rewrite":      # the same length, other bytes
        with open(path, "r+b") as f:
            f.seek(size // 3)
            f.write(bytes([0xA5]) * (size - size // 3))
    else:
        raise SystemExit(f"unknown change {change}")
for name, want in tensors().items():
    got = arrays[name]
    assert got.dtype == want.dtype and got.shape == want.shape, name
    assert np.array_equal(got, want), name
    assert got.tobytes() == want.tobytes(), name
print("touched", len(arrays))
"""


@pytest.mark.parametrize("change", ["empty", "half", "rewrite"])
@pytest.mark.parametrize("loader", ["stcheck", "stcheck.numpy"])
def test_load_file_arrays_survive_a_later_change_of_the_file(
    tmp_path: pathlib.Path, change: str, loader: str
) -> None:
    path = write_file(tmp_path / "m.safetensors", tensors())
    proc = _child(_TOUCH_AFTER_CHANGE, str(path), change, loader, str(path))
    _assert_clean(proc)
    assert proc.stdout.split() == ["touched", str(len(tensors()))]


@pytest.mark.parametrize("change", ["empty", "half"])
def test_sharded_arrays_survive_a_later_change_of_the_shards(tmp_path: pathlib.Path, change: str) -> None:
    index = _sharded(tmp_path)
    shards = sorted(str(p) for p in tmp_path.glob("s-*.safetensors"))
    proc = _child(_TOUCH_AFTER_CHANGE, str(index), change, "stcheck", *shards)
    _assert_clean(proc)


#: Open, change the file, then get every tensor: each is a ReadError ("changed") or the
#: value that was loaded; never a signal.
_SAFE_OPEN_THEN_CHANGE = """
import os, sys
import numpy as np
import stcheck

path, cut, kwargs, changed = sys.argv[1], int(sys.argv[2]), eval(sys.argv[3]), sys.argv[4]
outcome = {}
with stcheck.safe_open(path, framework="numpy", **kwargs) as f:
    reports = getattr(f.report, "shards", [f.report])  # a sharded set: its shards' reports
    offsets = {t.name: t.file_offsets for r in reports for t in r.tensors}
    os.truncate(changed, cut)
    for name in f.keys():
        try:
            got = f.get_tensor(name)
        except stcheck.ReadError as e:
            assert e.reason == "changed", (e, e.record)
            assert e.filename == changed and "changed while it was read" in str(e), str(e)
            outcome[name] = "ReadError"
            continue
        assert np.array_equal(got, tensors()[name]), name
        outcome[name] = "value"
    for name in f.keys():  # slices go through the same read
        try:
            f.get_slice(name)[:1]
        except stcheck.ReadError:
            assert outcome[name] == "ReadError", name
print(repr({n: (outcome[n], offsets[n]) for n in outcome}))
"""


def test_safe_open_then_truncation_then_get_tensor_raises_read_error(tmp_path: pathlib.Path) -> None:
    path = write_file(tmp_path / "m.safetensors", tensors())
    for cut in (0, 100, os.path.getsize(path) // 2):
        proc = _child(_SAFE_OPEN_THEN_CHANGE, str(path), str(cut), "{}", str(path))
        _assert_clean(proc)
        outcome = eval(proc.stdout)
        for name, (what, (begin, end)) in outcome.items():
            # A tensor with bytes past the cut cannot be read; one before it still can.
            want = "ReadError" if end > cut and end > begin else "value"
            assert what == want, (cut, name, what)
        assert "ReadError" in {what for what, _ in outcome.values()}
        write_file(path, tensors())


def test_safe_open_of_a_sharded_set_then_truncation_raises_read_error(tmp_path: pathlib.Path) -> None:
    for k in range(2):
        index = _sharded(tmp_path)  # every shard whole again
        shard = sorted(tmp_path.glob("s-*.safetensors"))[k]
        proc = _child(_SAFE_OPEN_THEN_CHANGE, str(index), "0", "{}", str(shard))
        _assert_clean(proc)
        outcome = eval(proc.stdout)
        assert "ReadError" in {what for what, _ in outcome.values()}


def test_deep_safe_open_holds_the_checked_bytes(tmp_path: pathlib.Path) -> None:
    """With the deep scan, the checked bytes are read once and kept: a truncation after the
    open changes no tensor."""
    path = write_file(tmp_path / "m.safetensors", tensors())
    proc = _child(_SAFE_OPEN_THEN_CHANGE, str(path), "0", "{'deep': True}", str(path))
    _assert_clean(proc)
    assert {what for what, _ in eval(proc.stdout).values()} == {"value"}


def test_explicit_mmap_is_zero_copy(tmp_path: pathlib.Path) -> None:
    """`mmap=True` keeps the old zero-copy path: views of a private map of the checked file."""
    import mmap

    path = write_file(tmp_path / "m.safetensors", tensors())
    arrays = stcheck.load_file(path, mmap=True)
    assert is_file_map(_base(arrays["f32"]))
    assert np.array_equal(arrays["i64"], tensors()["i64"])
    with stcheck.safe_open(path, mmap=True) as f:
        assert np.array_equal(f.get_tensor("u8"), tensors()["u8"])


def test_the_default_arrays_own_their_memory(tmp_path: pathlib.Path) -> None:
    """No array of the default loader is backed by a map of the file; they are writable (as
    safetensors.numpy's are), and a write reaches neither the file nor another array."""
    path = write_file(tmp_path / "m.safetensors", tensors())
    before = path.read_bytes()
    for arrays in (stcheck.load_file(path), stcheck.safe_open(path).get_tensors()):
        for name, arr in arrays.items():
            assert not is_file_map(_base(arr)), (name, type(_base(arr)))
            assert arr.flags.writeable, name
        arrays["u8"][:] = 7
        assert np.array_equal(arrays["i64"], tensors()["i64"])
    assert path.read_bytes() == before


def test_load_of_bytes_is_safe_from_later_changes() -> None:
    """`load` checks the bytes it is given and its arrays view an immutable `bytes`: a
    bytearray or memoryview passed in is copied first, so changing it later changes nothing."""
    from safetensors.numpy import save

    data = bytearray(save({"b": np.array([True, False, True])}))
    arrays = stcheck.load(data)
    data[-3:] = b"\x02\x02\x02"  # bytes the deep check rejects
    assert arrays["b"].view(np.uint8).tolist() == [1, 0, 1]
    view = memoryview(bytearray(save({"b": np.array([True])})))
    arrays = stcheck.load(view, deep=True)
    view[-1] = 2
    assert arrays["b"].view(np.uint8).tolist() == [1]


def _bool_file(path: pathlib.Path, n: int) -> int:
    """A file of one BOOL tensor of `n` elements, all true; the offset of its data."""
    write_file(path, {"b": np.ones(n, dtype=bool)})
    size = os.path.getsize(path)
    return size - n


#: Flip the byte at `at` between 0x02 and 0x01, holding each for a moment so that some loads
#: see one state throughout, until the file `stop` exists (bounded); then leave 0x02 there (a
#: view of the file shows it from then on) and print how many flips were made.
_FLIP = """
import os, sys, time
path, at, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fd = os.open(path, os.O_WRONLY)
flips = 0
for i in range(1_000_000):  # bounded; stopped long before
    if os.path.exists(stop):
        break
    os.pwrite(fd, b"\\x02" if i % 2 else b"\\x01", at)
    flips += 1
    time.sleep(0.002)
os.pwrite(fd, b"\\x02", at)
os.close(fd)
print(flips)
"""


def test_an_in_place_rewrite_racing_a_deep_load_never_hands_out_rejected_bytes(
    tmp_path: pathlib.Path,
) -> None:
    """A second process flips one byte of a BOOL tensor between 0x01 and 0x02 (which
    `DATA-BOOL` rejects) while this one loads the file with the deep scan, many times. Each
    load raises (the byte was 0x02: `DATA-BOOL`; or the file changed while it was read) or
    returns arrays whose bytes all pass the deep check, then and after the writer has left
    0x02 in the file."""
    n = 1 << 16
    path = tmp_path / "b.safetensors"
    at = _bool_file(path, n) + n // 2
    stop = tmp_path / "stop"
    outcomes: List[str] = []
    handed_out: List[np.ndarray] = []
    writer = subprocess.Popen(
        [sys.executable, "-c", _FLIP, str(path), str(at), str(stop)], stdout=subprocess.PIPE, text=True
    )
    try:
        # At least 400 loads, and on (boundedly) until the check has seen both states.
        while len(outcomes) < 400 or (
            not {"rejected", "loaded"} <= set(outcomes) and len(outcomes) < 20_000
        ):
            try:
                arrays = stcheck.load_file(path, deep=True)
            except stcheck.SafetensorsError as e:
                assert e.rule == "DATA-BOOL", e
                outcomes.append("rejected")
                continue
            except stcheck.ReadError as e:
                assert e.reason == "changed", e
                outcomes.append("changed")
                continue
            raw = arrays["b"].view(np.uint8)
            assert raw.max() <= 1, "an array holds a byte the deep check rejects"
            outcomes.append("loaded")
            handed_out.append(raw)
    finally:
        stop.touch()
        try:
            out, _ = writer.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            writer.kill()
            raise
    assert writer.returncode == 0
    flips = int(out)
    assert open(path, "rb").read()[at] == 2  # what the writer left
    # After more flips, and 0x02 left in the file: the bytes handed out are unchanged.
    for raw in handed_out:
        assert raw.max() <= 1, "an array handed out changed to a byte the deep check rejects"
    # The race was live: the writer flipped while loads ran, and the check saw both states.
    counts = {k: outcomes.count(k) for k in set(outcomes)}
    assert flips >= 2 and counts.get("rejected") and counts.get("loaded"), (flips, counts)
