"""Errors: verdicts carry rule IDs and offsets; a file that cannot be read is never a verdict."""

from __future__ import annotations

import errno
import os
import pathlib
import pickle
import threading
from typing import Any, Dict

import numpy as np
import pytest

import stcheck

from conftest import CASES, run_cli, write_file

_FILES = [c for c in CASES if c["kind"] == "file"]
_RECORDS, _ = run_cli([], [c["file"] for c in _FILES])


def test_validate_raises_with_the_rule_offset_and_tensor_of_the_cli() -> None:
    raised = 0
    for case, rec in zip(_FILES, _RECORDS):
        want = rec["data"]["error"]
        if want is None:
            assert stcheck.validate(case["file"]).valid
            continue
        with pytest.raises(stcheck.SafetensorsError) as info:
            stcheck.validate(case["file"])
        e = info.value
        assert isinstance(e, ValueError)
        assert (e.rule, e.offset, e.tensor, e.kind) == (
            want["rule"],
            want["offset"],
            want["tensor"],
            want["kind"],
        )
        assert isinstance(e, {"malformed": stcheck.MalformedError, "invalid": stcheck.InvalidError}[want["kind"]])
        assert e.rule in stcheck.RULES and stcheck.RULES[e.rule][0] == e.kind
        assert e.report is not None and not e.report.valid and e.path == case["file"]
        assert e.rule in str(e) and f"{e.offset:#x}" in str(e)
        raised += 1
    assert raised > 150
    # The safetensors package's name for the error class is an alias.
    assert stcheck.SafetensorError is stcheck.SafetensorsError


def test_errors_and_reports_pickle() -> None:
    invalid = next(c["file"] for c, r in zip(_FILES, _RECORDS) if r["data"]["status"] == "invalid")
    valid = next(c["file"] for c, r in zip(_FILES, _RECORDS) if r["data"]["status"] == "valid")
    with pytest.raises(stcheck.SafetensorsError) as info:
        stcheck.validate(invalid)
    e = pickle.loads(pickle.dumps(info.value))
    assert type(e) is type(info.value)
    assert (e.rule, e.offset, e.tensor, str(e)) == (
        info.value.rule,
        info.value.offset,
        info.value.tensor,
        str(info.value),
    )
    assert e.report == info.value.report
    for report in (stcheck.check(valid, sha256=True), stcheck.check(invalid)):
        copy = pickle.loads(pickle.dumps(report))
        assert copy == report and copy.to_dict() == report.to_dict()
        assert copy.tensors == report.tensors and copy.error == report.error
    index = next(c["file"] for c in CASES if c["kind"] == "index")
    report = stcheck.check_index(index)
    assert pickle.loads(pickle.dumps(report)) == report
    missing = pytest.raises(stcheck.ReadError, stcheck.check, "/nonexistent/x.safetensors").value
    copy = pickle.loads(pickle.dumps(missing))
    assert type(copy) is stcheck.NotFoundError and copy.errno == errno.ENOENT
    assert copy.filename == missing.filename and copy.record == missing.record


def test_reports_are_read_only() -> None:
    report = stcheck.check(_FILES[0]["file"])
    with pytest.raises(AttributeError):
        report.status = "valid"  # type: ignore[misc]
    d = report.to_dict()
    d["status"] = "changed"
    assert report.to_dict()["status"] != "changed"


def test_a_missing_file_is_an_os_error_not_a_verdict(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "missing.safetensors"
    for call in (stcheck.check, stcheck.validate, stcheck.load_file, stcheck.safe_open):
        with pytest.raises(FileNotFoundError) as info:
            call(path)
        e = info.value
        assert isinstance(e, stcheck.ReadError) and isinstance(e, stcheck.NotFoundError)
        assert not isinstance(e, ValueError)
        assert e.errno == errno.ENOENT and e.filename == str(path) and e.read_error == "not_found"
    rec = stcheck.record(path)
    assert rec == run_cli([], [str(path)])[0][0]
    assert rec["data"]["status"] == "io_error"


def test_special_files_are_not_checked_and_never_block(tmp_path: pathlib.Path) -> None:
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    outcome: Dict[str, Any] = {}

    def attempt() -> None:
        for name, call in (("check", stcheck.check), ("load", stcheck.load_file)):
            try:
                call(fifo)
            except stcheck.ReadError as e:
                outcome[name] = e

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(120)  # a guard against a hang, not a timing assertion
    assert not t.is_alive(), "opening a FIFO blocked"
    for e in outcome.values():
        assert isinstance(e, stcheck.NotCheckedError) and e.reason == "not_regular_file"
    assert len(outcome) == 2
    assert stcheck.record(fifo) == run_cli([], [str(fifo)])[0][0]
    with pytest.raises(stcheck.NotCheckedError):
        stcheck.check(tmp_path)  # a directory


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_permission_denied(tmp_path: pathlib.Path) -> None:
    path = write_file(tmp_path / "m.safetensors", {"x": np.zeros(1, np.uint8)})
    path.chmod(0)
    with pytest.raises(stcheck.ReadError) as info:
        stcheck.check(path)
    assert info.value.errno == errno.EACCES


def test_options_are_checked(tmp_path: pathlib.Path) -> None:
    path = write_file(tmp_path / "m.safetensors", {"x": np.zeros(1, np.uint8)})
    with pytest.raises(ValueError, match='deny=: no rule "NO-SUCH-RULE"'):
        stcheck.check(path, deny=["NO-SUCH-RULE"])
    with pytest.raises(ValueError, match="strict profile"):
        stcheck.check(path, profile="reference", deep=True)
    with pytest.raises(ValueError, match="profile"):
        stcheck.check(path, profile="lenient")
    with pytest.raises(ValueError, match="mode"):
        stcheck.check(path, mode="fast")
    with pytest.raises(TypeError, match="list of IDs"):
        stcheck.check(path, deny="FRAME-ALIGN")
    with pytest.raises(TypeError):
        stcheck.check(path, no_such_option=True)


def test_deny_and_allow_single_warning_rules(tmp_path: pathlib.Path) -> None:
    # A header whose length is not a multiple of 8 (FRAME-ALIGN, a warning).
    header = b'{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    assert len(header) % 8
    path = tmp_path / "m.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\x07")
    report = stcheck.check(path)
    assert report.valid and [w.rule for w in report.warnings] == ["FRAME-ALIGN"]
    assert report.warnings[0].severity == "warning"
    denied = stcheck.check(path, deny=["FRAME-ALIGN"])
    assert not denied.valid and denied.error.rule == "FRAME-ALIGN" and denied.error.promoted_warning
    assert stcheck.check(path, allow=["FRAME-ALIGN"]).warnings == []
    with pytest.raises(stcheck.InvalidError) as info:
        stcheck.validate(path, deny_warnings=True)
    assert info.value.rule == "FRAME-ALIGN"


def test_index_errors_carry_shard_and_location() -> None:
    invalid = [c["file"] for c in CASES if c["kind"] == "index" and not stcheck.check_index(c["file"]).valid]
    assert invalid
    for path in invalid:
        with pytest.raises(stcheck.SafetensorsError) as info:
            stcheck.validate(path)
        e = info.value
        assert e.rule is not None and e.rule.startswith("INDEX-") and e.offset_in in ("index", "shard")
        if e.rule == "INDEX-SHARD-INVALID":
            assert e.finding.cause is not None and e.shard is not None
