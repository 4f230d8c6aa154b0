"""Threads and processes: the GIL is released while bytes are checked; objects are shared
and pickled."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import pathlib
import sys
import threading
from typing import Any, Dict, List

import numpy as np
import pytest

import stcheck

from conftest import CASES, write_file

FILES = [c["file"] for c in CASES if c["kind"] == "file"]


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A 32 MiB file, for a deep scan that takes a while."""
    path = tmp_path_factory.mktemp("big") / "big.safetensors"
    rng = np.random.default_rng(7)
    return write_file(path, {"w": rng.standard_normal(8 << 20, dtype=np.float32)})


def test_the_gil_is_released_while_checking(big_file: pathlib.Path) -> None:
    """With a switch interval so long that Python never preempts a thread, the main thread can
    only run while a worker is inside `check` if `check` released the GIL. No timing is
    measured: the assertion is about what the main thread could observe."""
    old = sys.getswitchinterval()
    observed = []
    try:
        sys.setswitchinterval(1000.0)
        for _ in range(5):
            started, done = threading.Event(), threading.Event()

            def work() -> None:
                started.set()
                stcheck.check(big_file, sha256=True)
                done.set()

            t = threading.Thread(target=work)
            t.start()
            started.wait()
            # This line runs when the worker gives up the GIL: inside the check (released)
            # or after `done.set()` (never released).
            observed.append(not done.is_set())
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert any(observed), "the main thread never ran while a check was in progress"


def test_threads_check_in_parallel_with_the_same_results() -> None:
    opts: Dict[str, Any] = {"sha256": True}
    sequential = [stcheck.record(p, **opts) for p in FILES]
    with cf.ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(lambda p: stcheck.record(p, **opts), FILES))
    assert parallel == sequential


def test_a_report_is_shared_between_threads() -> None:
    report = stcheck.check(next(p for p in FILES if stcheck.check(p).valid), sha256=True)
    want = (report.to_dict(), report.tensors, report.warnings, report.sha256)

    def read(_: int) -> Any:
        return (report.to_dict(), report.tensors, report.warnings, report.sha256)

    with cf.ThreadPoolExecutor(max_workers=4) as pool:
        assert all(got == want for got in pool.map(read, range(64)))


def _validate(path: str) -> Any:
    return stcheck.validate(path)


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_processes_send_back_reports_and_errors(method: str) -> None:
    paths = FILES[:40]
    local: List[Any] = []
    for p in paths:
        try:
            local.append(stcheck.validate(p))
        except stcheck.SafetensorsError as e:
            local.append(e)
    ctx = multiprocessing.get_context(method)
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        futures = [pool.submit(_validate, p) for p in paths]
        remote = []
        for f in futures:
            e = f.exception()
            remote.append(e if e is not None else f.result())
    assert any(isinstance(x, stcheck.SafetensorsError) for x in remote)
    for a, b in zip(local, remote):
        assert type(a) is type(b)
        if isinstance(a, stcheck.SafetensorsError):
            assert (a.rule, a.offset, a.tensor, str(a)) == (b.rule, b.offset, b.tensor, str(b))
        else:
            assert a == b
    # Reports go to processes too (as arguments).
    report = next(x for x in local if isinstance(x, stcheck.Report))
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        assert pool.submit(_to_dict, report).result() == report.to_dict()


def _to_dict(report: Any) -> Any:
    return report.to_dict()
