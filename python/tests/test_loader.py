"""The strict loader: the arrays of safetensors.numpy, nothing from an invalid file."""

from __future__ import annotations

import hashlib
import mmap
import os
import pathlib
import sys
from typing import Any, Dict, List

import numpy as np
import pytest
import safetensors.numpy
from safetensors import safe_open as reference_open

import stcheck
import stcheck.numpy
from stcheck._loader import _NUMPY

from conftest import CASES, ROOT, array_base as _base, is_file_map, run_cli, write_file

#: What the CLI says of every corpus case (default options).
_RECORDS, _ = run_cli([], [c["file"] for c in CASES])
VERDICT = {c["id"]: r["data"] for c, r in zip(CASES, _RECORDS)}

VALID_FILES = [c for c in CASES if c["kind"] == "file" and VERDICT[c["id"]]["status"] == "valid"]
INVALID_FILES = [c for c in CASES if c["kind"] == "file" and VERDICT[c["id"]]["status"] == "invalid"]


#: numpy's limit on dimensions (NPY_MAXDIMS; 32 before numpy 2).
MAXDIMS = 64 if int(np.__version__.split(".")[0]) >= 2 else 32


def numpy_holds(path: str, dtypes: Any = _NUMPY) -> bool:
    """Whether numpy can hold every tensor of the file: its dtype and its number of dims."""
    return all(t.dtype in dtypes and len(t.shape) <= MAXDIMS for t in stcheck.check(path).tensors)


def test_the_corpus_has_both_kinds() -> None:
    assert len(VALID_FILES) > 100 and len(INVALID_FILES) > 150


@pytest.mark.parametrize("case", VALID_FILES, ids=lambda c: c["id"])
def test_equal_to_safetensors_numpy(case: Dict[str, Any]) -> None:
    """Every valid corpus file numpy can hold loads to the arrays safetensors.numpy gives."""
    if not numpy_holds(case["file"]):
        pytest.skip("a dtype safetensors.numpy cannot hold, or more dimensions than numpy's")
    if case.get("reference") != "accept":
        pytest.skip("the reference does not load this file")
    ours = stcheck.load_file(case["file"])
    theirs = safetensors.numpy.load_file(case["file"])
    assert list(ours) == sorted(theirs, key=list(ours).index) and set(ours) == set(theirs)
    for name, want in theirs.items():
        got = ours[name]
        assert got.dtype == want.dtype, name
        assert got.shape == want.shape, name
        assert got.tobytes() == want.tobytes(), name
    with stcheck.safe_open(case["file"], framework="numpy") as f, reference_open(case["file"], framework="np") as g:
        assert f.keys() == list(g.keys())
        # File order; zero-size tensors at one offset may come in any order (the
        # reference's order among them changes from run to run).
        offsets = {t.name: t.data_offsets for t in f.report.tensors}
        assert sorted(f.offset_keys()) == sorted(g.offset_keys())
        assert [offsets[n] for n in f.offset_keys()] == [offsets[n] for n in g.offset_keys()]
        assert f.metadata() == g.metadata()
        for name in f.keys():
            assert f.get_slice(name).get_shape() == list(g.get_slice(name).get_shape())
            assert f.get_slice(name).get_dtype() == g.get_slice(name).get_dtype()


@pytest.mark.parametrize("case", VALID_FILES, ids=lambda c: c["id"])
def test_tensor_bytes_match_the_manifest(case: Dict[str, Any]) -> None:
    """Every tensor numpy can hold (ml_dtypes included) has the manifest's bytes; the packed
    sub-byte dtypes raise TypeError."""
    expected = (case.get("expected") or {}).get("tensors")
    if not expected:
        pytest.skip("no expected tensors listed")
    with stcheck.safe_open(case["file"]) as f:
        for t in expected:
            if len(t["shape"]) > MAXDIMS:
                with pytest.raises(ValueError, match="dimension"):
                    f.get_tensor(t["name"])
                continue
            if t["dtype"] in ("F4", "F6_E2M3", "F6_E3M2"):
                with pytest.raises(TypeError, match=t["dtype"]):
                    f.get_tensor(t["name"])
                continue
            arr = f.get_tensor(t["name"])
            assert list(arr.shape) == [int(d) for d in t["shape"]]
            assert hashlib.sha256(arr.tobytes()).hexdigest() == t["sha256"], t["name"]


#: What the CLI says of every corpus file with the deep scan, read without a map.
_DEEP_RECORDS, _ = run_cli(["--deep", "--no-mmap"], [c["file"] for c in CASES if c["kind"] == "file"])
DEEP_VERDICT = {c["id"]: r["data"] for c, r in zip([c for c in CASES if c["kind"] == "file"], _DEEP_RECORDS)}


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] == "file"], ids=lambda c: c["id"])
def test_deep_loads_give_the_verdict_of_a_deep_check(case: Dict[str, Any]) -> None:
    """The loader reads the file into memory and checks that buffer (the header first, then
    the whole buffer with the deep scan): its verdict is the CLI's (rule, offset, tensor) for
    every corpus file, whichever way the loader keeps the file."""
    deep, header = DEEP_VERDICT[case["id"]], VERDICT[case["id"]]
    loaders = [
        ("load_file", lambda p: stcheck.load_file(p, deep=True), deep),
        ("load_file mmap", lambda p: stcheck.load_file(p, deep=True, mmap=True), deep),
        ("safe_open", lambda p: stcheck.safe_open(p, deep=True), deep),
        ("safe_open header only", lambda p: stcheck.safe_open(p), header),
    ]
    for label, load, verdict in loaders:
        if verdict["status"] == "valid":
            try:
                load(case["file"])
            except (TypeError, ValueError) as e:  # a dtype or rank numpy cannot hold
                assert not isinstance(e, stcheck.SafetensorsError), (label, e)
            continue
        first = verdict["error"]
        with pytest.raises(stcheck.SafetensorsError) as info:
            load(case["file"])
        e = info.value
        assert (e.rule, e.offset, e.tensor) == (first["rule"], first["offset"], first["tensor"]), label


@pytest.mark.parametrize("case", INVALID_FILES, ids=lambda c: c["id"])
def test_nothing_from_an_invalid_file(case: Dict[str, Any]) -> None:
    want = VERDICT[case["id"]]["error"]
    for load in (stcheck.load_file, lambda p: stcheck.safe_open(p), lambda p: stcheck.load(pathlib.Path(p).read_bytes())):
        with pytest.raises(stcheck.SafetensorsError) as info:
            load(case["file"])
        e = info.value
        assert (e.rule, e.offset, e.tensor) == (want["rule"], want["offset"], want["tensor"])
        assert isinstance(e, stcheck.MalformedError if want["kind"] == "malformed" else stcheck.InvalidError)


def test_sharded_sets_load_through_their_index() -> None:
    indexes = [c for c in CASES if c["kind"] == "index"]
    records, _ = run_cli([], [c["file"] for c in indexes])
    loaded = 0
    for case, rec in zip(indexes, records):
        if rec["data"]["status"] != "valid":
            with pytest.raises(stcheck.SafetensorsError) as info:
                stcheck.load_file(case["file"])
            assert info.value.rule == rec["data"]["errors"][0]["rule"]
            continue
        ours = stcheck.load_file(case["file"])
        theirs: Dict[str, np.ndarray] = {}
        directory = pathlib.Path(case["file"]).parent
        for shard in rec["data"]["shards"]:
            theirs.update(safetensors.numpy.load_file(str(directory / shard["name"])))
        assert set(ours) == set(theirs)
        for name in theirs:
            assert ours[name].tobytes() == theirs[name].tobytes()
        loaded += 1
    assert loaded > 0


def test_zero_copy_from_the_map_and_copy_on_write(tmp_path: pathlib.Path) -> None:
    path = write_file(tmp_path / "m.safetensors", {"w": np.arange(1000, dtype=np.float32)})
    before = path.read_bytes()
    arrays = stcheck.load_file(path, mmap=True)
    w = arrays["w"]
    assert not w.flags.owndata and is_file_map(_base(w))
    assert w.flags.writeable
    w[:] = -1
    assert path.read_bytes() == before  # a private map: writes never reach the file
    assert stcheck.load_file(path, mmap=True)["w"][5] == 5


@pytest.mark.parametrize("zero_copy", [False, True])
def test_unaligned_tensors_are_copied_aligned(zero_copy: bool) -> None:
    for case in VALID_FILES:
        report = stcheck.check(case["file"])
        if any(w.rule == "LAYOUT-ALIGN" for w in report.warnings) and all(
            t.dtype in _NUMPY for t in report.tensors
        ):
            break
    else:
        pytest.fail("no valid corpus file with a LAYOUT-ALIGN warning")
    unaligned = 0
    for arrays in (stcheck.load_file(case["file"], mmap=zero_copy),
                   stcheck.safe_open(case["file"], mmap=zero_copy).get_tensors()):
        for t in report.tensors:
            if t.elements and t.file_offsets[0] % np.dtype(_NUMPY[t.dtype]).itemsize:
                assert arrays[t.name].flags.aligned
                unaligned += 1
                if zero_copy:
                    assert isinstance(_base(arrays[t.name]), np.ndarray)  # a copy, not the map
    assert unaligned


def test_the_mapped_file_is_the_checked_file(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file swapped in at the path between the check and the map is not what is loaded:
    the loader maps the descriptor that was checked (same inode)."""
    path = write_file(tmp_path / "m.safetensors", {"w": np.full(4, 7, dtype=np.int32)})
    other = write_file(tmp_path / "other.safetensors", {"w": np.full(4, 9, dtype=np.int32)})
    from stcheck import _loader

    real_map = _loader._map

    def swap_then_map(fd: int) -> mmap.mmap:
        os.replace(other, path)
        return real_map(fd)

    monkeypatch.setattr(_loader, "_map", swap_then_map)
    arrays = stcheck.load_file(path, mmap=True)
    assert arrays["w"].tolist() == [7, 7, 7, 7]
    assert stcheck.check(path).valid  # the path now holds the other file


def test_safe_open_reads_from_the_checked_file(tmp_path: pathlib.Path) -> None:
    """`safe_open` reads its tensors from the open file it checked (the same inode), not
    from whatever the path names later."""
    path = write_file(tmp_path / "m.safetensors", {"w": np.full(4, 7, dtype=np.int32)})
    other = write_file(tmp_path / "other.safetensors", {"w": np.full(4, 9, dtype=np.int32)})
    with stcheck.safe_open(path) as f:
        os.replace(other, path)
        assert f.get_tensor("w").tolist() == [7, 7, 7, 7]
    assert stcheck.load_file(path)["w"].tolist() == [9, 9, 9, 9]


def test_every_backend_reads_into_memory(tmp_path: pathlib.Path) -> None:
    """`backend` takes safetensors' values and changes nothing: the arrays are views of the
    checked bytes in memory (writable, as safetensors.numpy's are: one buffer per file, a
    `bytearray` below 256 KiB, an anonymous map from there on), never of a map of the file."""
    path = write_file(tmp_path / "m.safetensors", {"a": np.arange(6, dtype=np.int16).reshape(2, 3)})
    for backend in ("pread", "read", "mmap"):
        arrays = stcheck.load_file(path, backend=backend)
        assert arrays["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
        assert arrays["a"].flags.writeable and isinstance(_base(arrays["a"]), bytearray)
        with stcheck.safe_open(path, backend=backend) as f:
            assert not isinstance(_base(f.get_tensor("a")), mmap.mmap)
    big = write_file(tmp_path / "big.safetensors", {"b": np.arange(1 << 17, dtype=np.int32)})
    arrays = stcheck.load_file(big)
    base = _base(arrays["b"])
    assert isinstance(base, mmap.mmap) and not is_file_map(base) and len(base) == big.stat().st_size
    assert arrays["b"].flags.writeable and np.array_equal(arrays["b"], np.arange(1 << 17, dtype=np.int32))
    with pytest.raises(ValueError, match="backend"):
        stcheck.load_file(path, backend="nope")


def test_load_from_bytes_is_a_view(tmp_path: pathlib.Path) -> None:
    data = safetensors.numpy.save({"x": np.arange(3, dtype=np.float64)}, metadata={"k": "v"})
    arrays = stcheck.load(data)
    assert arrays["x"].tolist() == [0.0, 1.0, 2.0]
    assert _base(arrays["x"]) is data and not arrays["x"].flags.writeable
    assert stcheck.numpy.load(data)["x"].tolist() == [0.0, 1.0, 2.0]


def test_bf16_and_f8_need_ml_dtypes(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ml_dtypes

    bf = np.array([1.0, -2.5], dtype=ml_dtypes.bfloat16)
    f8 = np.array([0.5, 448], dtype=ml_dtypes.float8_e4m3fn)
    # safetensors.numpy cannot write these dtypes: write the file by its layout.
    header = (
        b'{"b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},'
        b'"f":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[4,6]},'
        b'"u":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}}'
    )
    header += b" " * (-len(header) % 8)
    path = tmp_path / "bf.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header + bf.tobytes() + f8.tobytes() + b"\x01\x02")
    arrays = stcheck.load_file(path)
    assert arrays["b"].dtype == ml_dtypes.bfloat16 and arrays["b"].tolist() == [1.0, -2.5]
    assert arrays["f"].dtype == ml_dtypes.float8_e4m3fn and arrays["f"].tolist() == [0.5, 448.0]

    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # as if it were not installed
    with stcheck.safe_open(path) as f:
        assert f.get_tensor("u").tolist() == [1, 2]
        with pytest.raises(ModuleNotFoundError, match="ml_dtypes"):
            f.get_tensor("b")
    with pytest.raises(ModuleNotFoundError, match="pip install ml_dtypes"):
        stcheck.load_file(path)


def test_safe_open_api(tmp_path: pathlib.Path) -> None:
    path = write_file(
        tmp_path / "m.safetensors",
        {"b": np.arange(12, dtype=np.float32).reshape(3, 4), "a": np.array(5, dtype=np.int64)},
        metadata={"format": "np"},
    )
    with stcheck.safe_open(str(path), framework="np") as f:
        assert f.keys() == ["a", "b"]
        assert f.metadata() == {"format": "np"}
        s = f.get_slice("b")
        assert s.get_shape() == [3, 4] and s.get_dtype() == "F32" and len(s) == 3
        assert s[1:, ::2].tolist() == [[4.0, 6.0], [8.0, 10.0]]
        assert f.get_tensor("a").shape == () and int(f.get_tensor("a")) == 5
        with pytest.raises(KeyError):
            f.get_tensor("c")
        assert f.report.valid and f.report.tensor_count == 2
    with pytest.raises(ValueError, match="framework"):
        stcheck.safe_open(path, framework="tf")
    with pytest.raises(TypeError, match="unexpected"):
        stcheck.safe_open(path, profile="reference")


def test_loader_options_reach_the_check(tmp_path: pathlib.Path) -> None:
    nan = write_file(tmp_path / "nan.safetensors", {"x": np.array([np.nan], dtype=np.float32)})
    assert np.isnan(stcheck.load_file(nan)["x"][0])
    with pytest.raises(stcheck.InvalidError) as info:
        stcheck.load_file(nan, deny_nonfinite=True)
    assert info.value.rule == "DATA-NONFINITE" and info.value.tensor == "x"


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_no_descriptor_is_leaked(tmp_path: pathlib.Path) -> None:
    good = write_file(tmp_path / "g.safetensors", {"x": np.zeros(3, dtype=np.uint8)})
    bad = tmp_path / "b.safetensors"
    bad.write_bytes(good.read_bytes() + b"\0")
    index = next(c["file"] for c in CASES if c["kind"] == "index" and VERDICT[c["id"]]["status"] == "valid")
    bad_index = next(c["file"] for c in CASES if c["kind"] == "index" and VERDICT[c["id"]]["status"] != "valid")
    stcheck.load_file(good), stcheck.load_file(index)  # warm up imports
    before = _open_fds()
    for _ in range(50):
        stcheck.load_file(good)
        stcheck.load_file(index)
        stcheck.load_file(good, mmap=True)
        with stcheck.safe_open(good) as f:  # kept open, then closed with the object
            f.get_tensor("x")
        stcheck.safe_open(index).get_tensors()
        with pytest.raises(stcheck.SafetensorsError):
            stcheck.load_file(bad)
        with pytest.raises(stcheck.SafetensorsError):
            stcheck.load_file(bad_index)
        with pytest.raises(stcheck.ReadError):
            stcheck.load_file(tmp_path / "missing.safetensors")
    assert _open_fds() == before


def test_loader_refuses_urls_by_name() -> None:
    """The loader reads local files; a URL is refused as one (not "No such file")."""
    for url in ("hf://org/repo/model.safetensors", "https://example.invalid/m.safetensors"):
        for call in (lambda: stcheck.load_file(url), lambda: stcheck.safe_open(url)):
            with pytest.raises(stcheck.ReadError, match="URLs are not supported") as info:
                call()
            assert not isinstance(info.value, FileNotFoundError)
