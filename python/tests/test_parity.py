"""The Python package gives the CLI's record, field for field, on every corpus file."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

import stcheck

from conftest import CASES, ROOT, run_cli

#: (CLI flags, the same options in Python).
OPTION_SETS = {
    "default": ([], {}),
    "deep-sha256": (["--sha256"], {"sha256": True}),
    "deny-warnings": (["--deny-warnings"], {"deny_warnings": True}),
    "deny-nonfinite": (["--deny-nonfinite"], {"deny_nonfinite": True}),
    "no-mmap": (["--no-mmap"], {"mode": "read"}),
    "stream": (["--stream"], {"mode": "stream"}),
    "reference": (["--profile", "reference"], {"profile": "reference"}),
    "compare-reference": (["--compare-reference"], {"compare_reference": True}),
    "portable": (["--profile", "portable"], {"profile": "portable"}),
    "portable-to": (
        ["--portable-to", "mlx,python-numpy", "--refusals-are-errors"],
        {"portable_to": ["mlx", "python-numpy"], "refusals_are_errors": True},
    ),
    "header-limit": (
        ["--max-header-size", "300", "--max-warnings-per-rule", "1"],
        {"max_header_size": 300, "max_warnings_per_rule": 1},
    ),
}


def _stable(record: Dict[str, Any]) -> Dict[str, Any]:
    """The record without the text of a reference rejection: the reference crate names the
    first tensor it finds at fault in its HashMap's order, which is random per process (see
    corpus/invalid/attack/aliased-tensors: `bias` in one run, `weight` in the next)."""
    data = dict(record["data"])
    ref = data.get("reference")
    if ref and ref.get("verdict") == "reject":
        data["reference"] = dict(ref, message="<reference rejects>")
        if data.get("profile") == "reference" and data.get("error"):
            data["error"] = dict(data["error"], message="<reference rejects>")
    return {"type": record["type"], "data": data}


def _as_cli(record: Dict[str, Any]) -> Dict[str, Any]:
    """A Python record with its messages naming options as the CLI names them: each face's
    messages name the options as its users spell them (``follow_links=True`` here,
    ``--follow-links`` for the CLI); everything else is the same record."""
    text = json.dumps(record).replace("follow_links=True", "--follow-links")
    return json.loads(text)  # type: ignore[no-any-return]


def _diff(a: Dict[str, Any], b: Dict[str, Any]) -> str:
    keys = sorted(set(a) | set(b))
    return "; ".join(f"{k}: {a.get(k)!r} != {b.get(k)!r}" for k in keys if a.get(k) != b.get(k))


@pytest.mark.parametrize("option_set", sorted(OPTION_SETS))
@pytest.mark.parametrize("verbose", [False, True], ids=["plain", "verbose"])
def test_records_equal_the_cli(option_set: str, verbose: bool) -> None:
    flags, opts = OPTION_SETS[option_set]
    paths = [c["file"] for c in CASES]
    expected, _ = run_cli(flags + (["-v"] if verbose else []), paths)
    assert len(expected) == len(paths)
    mismatches: List[str] = []
    for path, want in zip(paths, expected):
        got = _stable(_as_cli(stcheck.record(path, verbose=verbose, **opts)))
        want = _stable(want)
        if got != want:
            mismatches.append(f"{path}: {_diff(got['data'], want['data']) or (got, want)}")
    assert not mismatches, "\n".join(mismatches[:20])


def test_report_keys_and_verdicts_equal_the_cli() -> None:
    """`check(...).to_dict()` has exactly the CLI's keys; verdict, rule and offset agree."""
    paths = [c["file"] for c in CASES if c["kind"] == "file"]
    expected, _ = run_cli(["-v", "--sha256"], paths)
    for path, want in zip(paths, expected):
        report = stcheck.check(path, sha256=True)
        data = report.to_dict()
        assert sorted(data) == sorted(want["data"]), path
        assert report.status == want["data"]["status"]
        error = want["data"]["error"]
        if error is None:
            assert report.error is None and report.valid
        else:
            assert (report.error.rule, report.error.offset, report.error.tensor) == (
                error["rule"],
                error["offset"],
                error["tensor"],
            )


def test_index_reports_equal_the_cli() -> None:
    paths = [c["file"] for c in CASES if c["kind"] == "index"]
    assert paths, "the corpus has sharded sets"
    expected, _ = run_cli(["-v"], paths)
    for path, want in zip(paths, expected):
        report = stcheck.check_index(path)
        assert _as_cli(report.to_record()) == want
        assert report.valid == (want["data"]["status"] == "valid")
        if not report.valid:
            assert report.error is not None and report.error.rule == want["data"]["errors"][0]["rule"]


@pytest.mark.parametrize("opts", [{}, {"sha256": True}], ids=["header", "deep"])
def test_bytes_give_the_record_of_the_file(opts: Dict[str, Any]) -> None:
    """Checking the bytes in memory gives the file's record, but for `path` and `mode`."""
    for case in CASES:
        if case["kind"] != "file":
            continue
        with open(case["file"], "rb") as f:
            data = f.read()
        from_file = stcheck.record(case["file"], verbose=True, **opts)["data"]
        from_bytes = stcheck.check(data, name="upload", **opts).to_dict()
        assert from_bytes.pop("path") == "upload"
        assert from_bytes.pop("mode") is None
        from_file.pop("path"), from_file.pop("mode")
        assert from_bytes == from_file, case["id"]
        # bytearray and memoryview are copied to bytes first, with the same result.
        assert stcheck.check(bytearray(data), name="upload", **opts).to_dict()["status"] == from_file["status"]


def test_a_name_that_is_not_utf8_is_shown_as_the_cli_shows_it(tmp_path: Any) -> None:
    import os

    source = next(c["file"] for c in CASES if c["kind"] == "file")
    name = os.path.join(os.fsencode(tmp_path), b"m\xff\xfe.safetensors")
    with open(source, "rb") as f, open(name, "wb") as g:
        g.write(f.read())
    path = os.fsdecode(name)  # a str with surrogate escapes, as os.listdir gives it
    want, _ = run_cli(["-v"], [path])
    got = stcheck.record(path, verbose=True)
    assert got == want[0]
    assert "\\xff\\xfe" in got["data"]["path"]


def test_report_text_is_the_cli_line_byte_for_byte() -> None:
    """``check(path).to_json()`` is the line ``stcheck --json -v`` writes, byte for byte (the
    same printer writes both); the fields a report answers without it agree with it."""
    import subprocess

    from conftest import cli

    files = [c["file"] for c in CASES if c["kind"] == "file"][:200]
    proc = subprocess.run([cli(), "--json", "-v", "--", *files], capture_output=True, text=True)
    lines = proc.stdout.splitlines()[:-1]  # the summary last
    assert len(lines) == len(files)
    for path, line in zip(files, lines):
        want = json.loads(line)
        if want["type"] != "file" or want["data"]["status"] not in ("valid", "invalid"):
            continue
        report = stcheck.check(path)
        assert report.status == want["data"]["status"], path
        assert report.path == want["data"]["path"], path
        assert report.to_json() == line, path
        assert report.to_record() == want, path


def test_check_and_load_parse_no_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check answers ``status``, ``valid`` and ``path`` from the native verdict, and the
    loader finds the tensors from native descriptions: no JSON record is written or parsed
    until another field is asked for (then the CLI's, once)."""
    import json as json_module

    import numpy as np

    monkeypatch.chdir(ROOT)
    valid = "examples/model.safetensors"
    invalid = "examples/duplicate-name.safetensors"
    want = {p: stcheck.record(p, verbose=True)["data"] for p in (valid, invalid)}
    calls: List[str] = []
    real_loads = json_module.loads

    def counting_loads(text: Any, *args: Any, **kw: Any) -> Any:
        calls.append(text)
        return real_loads(text, *args, **kw)

    monkeypatch.setattr(json_module, "loads", counting_loads)
    reports = [stcheck.check(valid), stcheck.check(invalid)]
    assert [(r.path, r.status, r.valid) for r in reports] == [
        (valid, "valid", True),
        (invalid, "invalid", False),
    ]
    tensors = stcheck.load_file(valid)
    assert isinstance(tensors["embed.tokens"], np.ndarray)
    assert calls == []
    # The rest of the record, on demand: the CLI's, parsed once per report.
    assert reports[1].error.rule == "JSON-DUPLICATE-KEY"
    assert reports[0].to_dict() == want[valid] and reports[1].to_dict() == want[invalid]
    assert len(calls) == 2
