"""The stcheck binary a whole-process benchmark of benches/ runs: `--bin BIN`, or the release
build of this tree (built with cargo first); and `--baseline BIN`, an older one run beside it."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def add_args(ap: argparse.ArgumentParser, baseline: str) -> None:
    """Add --bin and --baseline (whose help is `baseline`) to `ap`."""
    ap.add_argument("--bin", help="the stcheck binary (default: build target/release/stcheck)")
    ap.add_argument("--baseline", help=baseline)


def stcheck(a: argparse.Namespace) -> str:
    """The binary --bin names, or the release build of this tree."""
    if a.bin:
        return a.bin
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "stcheck-cli", "--bin", "stcheck"], cwd=ROOT, check=True)
    return str(ROOT / "target" / "release" / "stcheck")
