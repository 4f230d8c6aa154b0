"""framework="pt": the tensors of safetensors.torch from the strict loader.

The tests that need torch skip when it is not installed (target/python-venv has no torch);
python/setup-torch-venv.sh makes target/torch-venv, where they run. The test of the error
without torch runs everywhere (it blocks the import).
"""

from __future__ import annotations

import pathlib
import struct
import sys
from typing import Any, Dict, List

import pytest

import stcheck
import stcheck.torch
from stcheck._loader import _TORCH

from conftest import CASES


def test_without_torch_a_clear_error(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without torch, framework="pt" raises ModuleNotFoundError naming torch, before the file
    is read (a missing file still says torch first); numpy loading is unaffected."""
    path = tmp_path / "m.safetensors"
    path.write_bytes(_file([("x", "F32", [1], b"\0\0\x80\x3f")]))
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    for call in (
        lambda: stcheck.load_file(path, framework="pt"),
        lambda: stcheck.torch.load_file(path),
        lambda: stcheck.torch.load(path.read_bytes()),
        lambda: stcheck.safe_open(path, framework="pt"),
        lambda: stcheck.load_file(tmp_path / "missing.safetensors", framework="pt"),
    ):
        with pytest.raises(ModuleNotFoundError, match="needs the torch package") as info:
            call()
        assert info.value.name == "torch"
    assert stcheck.load_file(path)["x"].tolist() == [1.0]


def test_unknown_framework_is_refused(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "m.safetensors"
    path.write_bytes(_file([("x", "U8", [1], b"\x01")]))
    with pytest.raises(ValueError, match="framework"):
        stcheck.load_file(path, framework="tf")
    with pytest.raises(ValueError, match="device"):
        stcheck.load_file(path, device="cuda")  # numpy has only the CPU


def _file(tensors: List[Any], metadata: Any = None, pad: int = 8) -> bytes:
    """A safetensors file written by hand: (name, dtype, shape, bytes) in this order, packed
    with no gaps (so offsets need not be aligned)."""
    import json

    header: Dict[str, Any] = {}
    data = b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % pad)
    return struct.pack("<Q", len(text)) + text + data


# --- with torch ---------------------------------------------------------------------------


def _torch() -> Any:
    return pytest.importorskip("torch", reason="torch is not installed (see python/setup-torch-venv.sh)")


def _bytes(t: Any) -> bytes:
    """A tensor's bytes, whatever its dtype."""
    torch = _torch()
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def _same(got: Any, want: Any, name: str) -> None:
    torch = _torch()
    assert isinstance(got, torch.Tensor), name
    assert got.dtype == want.dtype, name
    assert got.shape == want.shape, name
    assert got.device == want.device, name
    assert _bytes(got) == _bytes(want), name


def _torch_holds(path: str) -> bool:
    torch = _torch()
    return all(
        getattr(torch, _TORCH.get(t.dtype, ""), None) is not None for t in stcheck.check(path).tensors
    )


VALID_FILES = [c for c in CASES if c["kind"] == "file" and c.get("reference") == "accept"]


@pytest.mark.parametrize("case", VALID_FILES, ids=lambda c: c["id"])
def test_equal_to_safetensors_torch(case: Dict[str, Any]) -> None:
    """Every corpus file both accept that torch can hold loads to safetensors.torch's tensors:
    load_file, safe_open (keys, get_tensor, get_slice, metadata), and load."""
    torch = _torch()
    import safetensors.torch
    from safetensors import safe_open as reference_open

    if not stcheck.check(case["file"]).valid:
        pytest.skip("not valid under the strict profile: the loader refuses it (tested elsewhere)")
    if not _torch_holds(case["file"]):
        pytest.skip("a dtype this torch has no type for")
    try:
        theirs = safetensors.torch.load_file(case["file"])
    except Exception as e:  # noqa: BLE001 - the reference's own limits
        pytest.skip(f"safetensors.torch does not load it: {e}")
    ours = stcheck.load_file(case["file"], framework="pt")
    assert set(ours) == set(theirs)
    for name, want in theirs.items():
        _same(ours[name], want, name)
    for name, got in stcheck.torch.load(pathlib.Path(case["file"]).read_bytes()).items():
        _same(got, theirs[name], name)
    with stcheck.safe_open(case["file"], framework="pt", device="cpu") as f, reference_open(
        case["file"], framework="pt"
    ) as g:
        assert f.keys() == list(g.keys())
        assert f.metadata() == g.metadata()
        for name in f.keys():
            _same(f.get_tensor(name), g.get_tensor(name), name)
            assert f.get_slice(name).get_shape() == list(g.get_slice(name).get_shape())
            assert f.get_slice(name).get_dtype() == g.get_slice(name).get_dtype()
            if f.get_slice(name).get_shape()[:1] not in ([], [0]):
                _same(f.get_slice(name)[:1], g.get_slice(name)[:1], name)
    assert len(ours) == 0 or all(t.device == torch.device("cpu") for t in ours.values())


def test_every_torch_dtype(tmp_path: pathlib.Path) -> None:
    """Every dtype this torch has, written by safetensors.torch and read back, equal to what
    safetensors.torch reads; with mmap=True, from safe_open, and from bytes."""
    torch = _torch()
    import safetensors.torch

    tensors = {}
    for st, name in _TORCH.items():
        dt = getattr(torch, name, None)
        if dt is None:
            continue
        raw = bytes(range(1, 1 + 6 * dt.itemsize))
        if dt == torch.bool:
            raw = bytes([1, 0, 1, 1, 0, 0])
        tensors[st] = torch.frombuffer(bytearray(raw), dtype=dt).reshape(2, 3)
    assert {"BF16", "F8_E4M3", "F8_E5M2", "BOOL", "C64", "F16", "F64"} <= set(tensors)
    path = tmp_path / "all.safetensors"
    try:
        safetensors.torch.save_file(tensors, str(path))
    except Exception:
        # A dtype the writer does not know (e.g. F8_E8M0 in an older safetensors): write the
        # rest, and that one by hand below.
        tensors = {k: v for k, v in tensors.items() if k != "F8_E8M0"}
        safetensors.torch.save_file(tensors, str(path))
    theirs = safetensors.torch.load_file(str(path))
    for kw in ({}, {"mmap": True}, {"deep": True}):
        ours = stcheck.load_file(path, framework="pt", **kw)
        assert set(ours) == set(theirs)
        for name in theirs:
            _same(ours[name], theirs[name], name)
            _same(ours[name], tensors[name], name)
    with stcheck.safe_open(path, framework="pt") as f:
        for name in theirs:
            _same(f.get_tensor(name), theirs[name], name)
    for name, got in stcheck.torch.load(path.read_bytes()).items():
        _same(got, theirs[name], name)


def test_unaligned_zero_size_and_scalar(tmp_path: pathlib.Path) -> None:
    """A tensor at an offset that is not a multiple of its element size (LAYOUT-ALIGN, a
    warning) is copied to aligned memory; zero-size and 0-d tensors have their shapes."""
    torch = _torch()
    path = tmp_path / "odd.safetensors"
    f32 = struct.pack("<3f", 1.5, -2.0, 3.25)
    path.write_bytes(
        _file(
            [
                ("a", "U8", [3], b"\x07\x08\x09"),
                ("b", "F32", [3], f32),
                ("c", "BF16", [0, 4], b""),
                ("d", "I64", [], struct.pack("<q", -5)),
                ("e", "BOOL", [2], b"\x01\x00"),
            ]
        )
    )
    report = stcheck.check(path)
    assert report.valid and "LAYOUT-ALIGN" in {w.rule for w in report.warnings}
    for kw in ({}, {"mmap": True}):
        got = stcheck.load_file(path, framework="pt", **kw)
        assert got["a"].tolist() == [7, 8, 9] and got["a"].dtype == torch.uint8
        assert got["b"].tolist() == [1.5, -2.0, 3.25] and got["b"].dtype == torch.float32
        assert got["b"].data_ptr() % 4 == 0
        assert got["c"].shape == (0, 4) and got["c"].dtype == torch.bfloat16
        assert got["d"].shape == () and int(got["d"]) == -5
        assert got["e"].tolist() == [True, False]
    with stcheck.safe_open(path, framework="pt") as f:
        assert f.get_tensor("b").tolist() == [1.5, -2.0, 3.25]
        assert f.get_tensor("c").shape == (0, 4)
        assert f.get_slice("b")[1:].tolist() == [-2.0, 3.25]


def test_tensors_survive_truncation(tmp_path: pathlib.Path) -> None:
    """The tensors hold the checked bytes: truncating or rewriting the file changes none."""
    torch = _torch()
    import safetensors.torch

    path = tmp_path / "m.safetensors"
    safetensors.torch.save_file({"w": torch.arange(1000, dtype=torch.float32)}, str(path))
    loaded = stcheck.load_file(path, framework="pt")
    with stcheck.safe_open(path, framework="pt") as f:
        one = f.get_tensor("w")
    with open(path, "r+b") as fh:
        fh.truncate(100)
    path.write_bytes(b"\xff" * 10)
    assert loaded["w"].tolist() == list(range(1000))
    assert one.tolist() == list(range(1000))
    loaded["w"][0] = 5.0  # writable, as safetensors.torch's tensors are
    assert loaded["w"][0] == 5.0


@pytest.mark.parametrize("elements", [1000, 1 << 18], ids=["bytearray", "mapped-buffer"])
def test_load_file_copies_nothing(tmp_path: pathlib.Path, elements: int) -> None:
    """Issue 34: torch loads hold the file once. Every tensor of ``load_file(framework="pt")``
    is a view of the one buffer the file was read into and checked in: its data pointer is
    the first tensor's plus the distance between their offsets in the file, so no tensor was
    copied (a second copy of the file would put the tensors elsewhere). Both buffers the
    loader makes: a ``bytearray`` below 256 KiB, a numpy array over an anonymous map from
    there on (1 MiB tensors here)."""
    torch = _torch()
    import safetensors.torch

    path = tmp_path / "m.safetensors"
    dtypes = (torch.float32, torch.int64, torch.float16, torch.bfloat16, torch.uint8)
    safetensors.torch.save_file(
        {f"t{i}": torch.full((elements,), i, dtype=dt) for i, dt in enumerate(dtypes)}, str(path)
    )
    offsets = {t.name: t.file_offsets[0] for t in stcheck.check(path).tensors}
    loaded = stcheck.load_file(path, framework="pt")
    base = loaded["t0"].data_ptr() - offsets["t0"]
    assert {name: t.data_ptr() - base for name, t in loaded.items()} == offsets


@pytest.mark.parametrize("elements", [1 << 15, 1 << 17], ids=["bytearray", "mapped-buffer"])
@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_load_of_a_writable_buffer_copies_it_once(elements: int, kind: Any) -> None:
    """``stcheck.torch.load`` of a ``bytearray`` (or a ``memoryview`` of one) copies it once:
    the copy the check reads is the one the tensors view. Copies are counted by ``tracemalloc``
    (Python's allocator, which ``bytes`` and ``bytearray`` use; the loader's mapped buffer from
    256 KiB is not Python's, so it counts 0): the most allocated during the call stays under
    1.5 times the file, where a ``bytes`` copy for the check and a ``bytearray`` copy for torch
    made twice the file. The tensors hold the checked bytes: changing the caller's buffer after
    the call changes none."""
    torch = _torch()
    import tracemalloc

    import safetensors.torch

    want = {"a": torch.arange(elements, dtype=torch.float32), "b": torch.tensor([7], dtype=torch.int64)}
    source = bytearray(safetensors.torch.save(want))
    data = kind(source)
    stcheck.torch.load(bytes(source))  # the imports and caches of a first call, before counting
    tracemalloc.start()
    try:
        got = stcheck.torch.load(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * len(source), (peak, len(source))
    source[-8:] = b"\xff" * 8
    for name, t in want.items():
        _same(got[name], t, name)
    got["a"][0] = 5.0  # writable, as safetensors.torch's tensors are
    assert got["a"][0] == 5.0


def test_invalid_file_gives_no_tensor(tmp_path: pathlib.Path) -> None:
    _torch()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(_file([("x", "F32", [2], b"\0" * 4)]))  # 4 bytes for 2 elements
    with pytest.raises(stcheck.InvalidError):
        stcheck.load_file(path, framework="pt")
    with pytest.raises(stcheck.InvalidError):
        stcheck.safe_open(path, framework="pt")
    with pytest.raises(stcheck.InvalidError):
        stcheck.torch.load(path.read_bytes())


def test_device_values(tmp_path: pathlib.Path) -> None:
    """``device`` as safetensors.torch takes it: a string or a torch.device (the CPU here)."""
    torch = _torch()
    path = tmp_path / "m.safetensors"
    path.write_bytes(_file([("x", "I32", [2], struct.pack("<2i", 4, -4))]))
    for device in ("cpu", torch.device("cpu")):
        assert stcheck.load_file(path, framework="pt", device=device)["x"].tolist() == [4, -4]
        assert stcheck.torch.load_file(path, device)["x"].device.type == "cpu"
        with stcheck.safe_open(path, framework="pt", device=device) as f:
            assert f.get_tensor("x").device.type == "cpu"
    with pytest.raises(RuntimeError):
        stcheck.load_file(path, framework="pt", device="no-such-device")


def test_sharded_set(tmp_path: pathlib.Path) -> None:
    """A sharded set by its index: checked as a set, every shard's tensors as torch tensors."""
    torch = _torch()
    import json

    import safetensors.torch

    parts = {
        "s-00001.safetensors": {"a": torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)},
        "s-00002.safetensors": {"b": torch.tensor([True, False]), "c": torch.zeros(0, dtype=torch.int64)},
    }
    weight_map = {}
    for shard, tensors in parts.items():
        safetensors.torch.save_file(tensors, str(tmp_path / shard))
        weight_map.update({n: shard for n in tensors})
    index = tmp_path / "s.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    for kw in ({}, {"mmap": True}):
        got = stcheck.load_file(index, framework="pt", **kw)
        assert set(got) == {"a", "b", "c"}
        for tensors in parts.values():
            for name, want in tensors.items():
                _same(got[name], want, name)
    with stcheck.safe_open(index, framework="pt") as f:
        _same(f.get_tensor("a"), parts["s-00001.safetensors"]["a"], "a")
        assert f.metadata() is None
