"""Threads and processes: the GIL is released while bytes are checked; objects are shared
and pickled."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import sys
import threading
from typing import Any, Dict, List

import pytest

import stcheck

from conftest import CASES

FILES = [c["file"] for c in CASES if c["kind"] == "file"]


@pytest.mark.skipif(not stcheck._native.remote, reason="built without remote checking")
def test_the_gil_is_released_while_checking() -> None:
    """With a switch interval so long that Python never preempts a thread, the main thread can
    only run while a worker is inside `check` if `check` released the GIL. The check is held
    inside deterministically: it asks a listening socket (127.0.0.1) that this test accepts
    only from the main thread, so the check cannot end before the main thread answers it. The event counted: the main thread accepted the check's
    connection while the check was still under way. Not released, the main thread runs only
    after the check gave up (its deadline, 60 s: a hang guard), and sees it done. No timing is
    measured and nothing is retried."""
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(120)  # a hang guard
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/held.safetensors"
    old = sys.getswitchinterval()
    started, done = threading.Event(), threading.Event()
    errors: List[BaseException] = []

    def work() -> None:
        started.set()
        try:
            stcheck.check(url, timeout=60)
        except BaseException as e:  # noqa: B036 (handed to the main thread)
            errors.append(e)
        done.set()

    t = threading.Thread(target=work)
    try:
        sys.setswitchinterval(1000.0)
        t.start()
        started.wait()
        # This runs when the worker gives up the GIL: inside the check (released), or once
        # the check has ended (never released).
        connection, _ = listener.accept()
        in_check = not done.is_set()
        # The check ends: its request answered with a 404, which is not retried.
        connection.settimeout(120)  # a hang guard
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = connection.recv(4096)
            if not chunk:
                break
            request += chunk
        connection.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        connection.close()
    finally:
        sys.setswitchinterval(old)
        t.join(120)
        listener.close()
    assert in_check, "the main thread ran only after the check had ended: the GIL was held"
    assert len(errors) == 1 and isinstance(errors[0], stcheck.ReadError), errors
    assert errors[0].http_status == 404


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
