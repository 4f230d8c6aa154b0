"""The CLI and Python resolve options through one function (the gate's ``RunOptions``), and
walk directories with one walker: the same options give the same errors and records."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
from typing import Any, Dict, List, Sequence

import pytest

import stcheck

from conftest import CORPUS, cli, run_cli

#: How each face spells an option in its messages (CLI flag, Python keyword).
NAMES = [
    ("--allow", "allow="),
    ("--deny-nonfinite", "deny_nonfinite=True"),
    ("--deny", "deny="),
    ("--deep", "deep=True"),
    ("--sha256", "sha256=True"),
    ("--portable-to", "portable_to="),
    ("--refusals-are-errors", "refusals_are_errors=True"),
    ("--max-warnings-per-rule", "max_warnings_per_rule="),
    ("--follow-links", "follow_links=True"),
    ("--max-requests", "max_requests="),
    ("--timeout", "timeout="),
    ("--profile", "profile="),
]

#: Conflicting or wrong options: (CLI flags, the same in Python).
CONFLICTS = [
    (["--allow", "LAYOUT-ALIGN", "--deny", "LAYOUT-ALIGN"], {"allow": ["LAYOUT-ALIGN"], "deny": ["LAYOUT-ALIGN"]}),
    (["--allow", "DATA-NONFINITE", "--deny-nonfinite"], {"allow": ["DATA-NONFINITE"], "deny_nonfinite": True}),
    (["--allow", "JSON-DUPLICATE-KEY"], {"allow": ["JSON-DUPLICATE-KEY"]}),
    (["--deny", "NO-SUCH-RULE"], {"deny": ["NO-SUCH-RULE"]}),
    (["--deny", "LAYOUT-ALIGNN"], {"deny": ["LAYOUT-ALIGNN"]}),
    (["--profile", "reference", "--deep"], {"profile": "reference", "deep": True}),
    (["--profile", "reference", "--portable-to", "mlx"], {"profile": "reference", "portable_to": ["mlx"]}),
    (["--portable-to", "no-such-reader"], {"portable_to": ["no-such-reader"]}),
    (["--refusals-are-errors"], {"refusals_are_errors": True}),
    (["--max-warnings-per-rule", "0"], {"max_warnings_per_rule": 0}),
    # Value checks of the gate's table, once in the CLI alone (Python accepted them).
    (["--max-requests", "0"], {"max_requests": 0}),
    (["--timeout", "1e9"], {"timeout": 1e9}),
    (["--timeout", "0"], {"timeout": 0}),
    (["--profile", "lax"], {"profile": "lax"}),
]


def _cli_error(flags: Sequence[str], path: str) -> str:
    proc = subprocess.run([cli(), *flags, "--", path], capture_output=True, text=True, check=False)
    assert proc.returncode == 2, (flags, proc.stdout, proc.stderr)
    line = proc.stderr.strip().splitlines()[0]
    assert line.startswith("stcheck: "), line
    return line[len("stcheck: "):]


def _as_python(message: str) -> str:
    for flag, keyword in NAMES:
        message = message.replace(flag, keyword)
    return message


@pytest.mark.parametrize("flags,opts", CONFLICTS, ids=[" ".join(f) for f, _ in CONFLICTS])
def test_the_same_conflict_gives_the_same_error(flags: List[str], opts: Dict[str, Any]) -> None:
    path = str(CORPUS / "valid" / "dtype" / "bool.safetensors")
    want = _cli_error(flags, path)
    with pytest.raises(ValueError) as info:
        stcheck.check(path, **opts)
    assert str(info.value) == _as_python(want)


def _tree(root: pathlib.Path) -> pathlib.Path:
    """A tree with what a gate meets: valid and invalid files, a sharded set, a FIFO, a link
    leaving the tree, a dangling link, a name that is not UTF-8, an empty directory."""
    top = root / "tree"
    top.mkdir()
    shutil.copy(CORPUS / "valid" / "dtype" / "bool.safetensors", top / "a.safetensors")
    shutil.copy(CORPUS / "malformed" / "duplicate" / "tensor-name.safetensors", top / "b.safetensors")
    shutil.copytree(CORPUS / "valid" / "index" / "two-shards", top / "set")
    (top / "empty").mkdir()
    os.mkfifo(top / "pipe.safetensors")
    outside = root / "outside.safetensors"
    shutil.copy(top / "a.safetensors", outside)
    os.symlink(outside, top / "out.safetensors")
    os.symlink(root / "nowhere.safetensors", top / "dangling.safetensors")
    with open(os.path.join(os.fsencode(top), b"n\xff.safetensors"), "wb") as f:
        f.write((top / "a.safetensors").read_bytes())
    return top


def test_tree_records_equal_the_cli(tmp_path: pathlib.Path) -> None:
    top = _tree(tmp_path)
    want, summary = run_cli(["-v"], [str(top)])
    got = stcheck.records_tree(str(top), verbose=True)
    assert [json.loads(json.dumps(r).replace("follow_links=True", "--follow-links")) for r in got] == want
    kinds = {r["type"] for r in want}
    assert kinds == {"file", "index", "not_checked"}, kinds
    # Invalid files and paths not checked: the gate's exit code 2 (nothing is ever valid by default).
    assert summary["exit_code"] == 2


def test_check_tree_reports_and_errors(tmp_path: pathlib.Path) -> None:
    top = _tree(tmp_path)
    results = stcheck.check_tree(top)
    reports = [r for r in results if not isinstance(r, stcheck.ReadError)]
    errors = [r for r in results if isinstance(r, stcheck.ReadError)]
    assert any(isinstance(r, stcheck.IndexReport) and r.valid for r in reports)
    assert any(not r.valid for r in reports)
    reasons = {e.reason for e in errors}
    assert "not_regular_file" in reasons and "link_leaves_root" in reasons, reasons
    # The walk is the CLI's: the same count of records.
    want, _ = run_cli([], [str(top)])
    assert len(results) == len(want)
