"""Shared fixtures: the repository, the corpus manifest, and the CLI to compare with."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from typing import Any, Dict, List, Sequence, Tuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
#: Where `stcorpus --large` writes the large cases, if they were generated.
LARGE = pathlib.Path(os.environ.get("STCHECK_CORPUS_LARGE", ROOT / "target" / "corpus-large"))


def cli() -> str:
    """The stcheck CLI: $STCHECK_CLI, else the debug build python/setup-venv.sh makes."""
    env = os.environ.get("STCHECK_CLI")
    if env:
        return env
    path = ROOT / "target" / "debug" / "stcheck"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run python/setup-venv.sh (cargo build -p stcheck)")
    return str(path)


def run_cli(flags: Sequence[str], paths: Sequence[str]) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """`stcheck --json FLAGS -- PATHS`: the records, and the summary."""
    proc = subprocess.run(
        [cli(), "--json", *flags, "--", *paths],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 1, 2), proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines and lines[-1]["type"] == "summary", proc.stdout[-2000:]
    assert lines[-1]["data"]["exit_code"] == proc.returncode
    return lines[:-1], lines[-1]["data"]


def _cases() -> List[Dict[str, Any]]:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    cases = [dict(c, file=str(CORPUS / c["path"])) for c in manifest["cases"]]
    for c in manifest.get("large", []):
        path = LARGE / c["path"]
        if path.exists():
            cases.append(dict(c, file=str(path)))
    return cases


CASES = _cases()


@pytest.fixture(scope="session")
def cases() -> List[Dict[str, Any]]:
    """Every corpus case (and the large ones, when they were generated)."""
    assert len(CASES) >= 300, "the corpus manifest lists fewer cases than expected"
    return CASES


def write_file(path: pathlib.Path, tensors: Dict[str, Any], metadata: Any = None) -> pathlib.Path:
    """A safetensors file written by the reference writer (safetensors.numpy)."""
    from safetensors.numpy import save_file

    save_file(tensors, str(path), metadata=metadata)
    return path


def is_file_map(obj: Any) -> bool:
    """Whether ``obj`` is a map of a file (an ``mmap.mmap`` made over a file number), not an
    anonymous map such as the loader's buffers (which have no file to ask their size of)."""
    import mmap

    if not isinstance(obj, mmap.mmap):
        return False
    try:
        obj.size()
    except OSError:
        return False
    return True


def array_base(arr: Any) -> Any:
    """What a numpy array's memory belongs to (through views and memoryviews): a map, a
    ``bytearray``, ``bytes``, or an array that owns its data."""
    import numpy as np

    while True:
        if isinstance(arr, np.ndarray) and arr.base is not None:
            arr = arr.base
        elif isinstance(arr, memoryview):
            arr = arr.obj
        else:
            return arr
