"""URLs go through the library's remote source and give the CLI's records.

A server on 127.0.0.1 (Python's http.server, which ignores Range and sends whole files: the
remote source reads only as far as it needs) serves the corpus; it stops with the module."""

from __future__ import annotations

import functools
import json
import http.server
import shutil
import socket
import ssl
import subprocess
import threading
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import stcheck
import stcheck.dask

from conftest import CASES, CORPUS, run_cli

pytestmark = pytest.mark.skipif(not stcheck._native.remote, reason="built without remote checking")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(CORPUS))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.timeout = 30
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)


def _urls(base: str) -> List[str]:
    files = [c for c in CASES if c["kind"] == "file" and c["file"].startswith(str(CORPUS))]
    picked = files[::25] + [c for c in CASES if c["kind"] == "index"][:4]
    return [f"{base}/{c['path']}" for c in picked] + [f"{base}/no/such.safetensors"]


@pytest.mark.parametrize(
    "flags,opts",
    [
        ([], {}),
        (["--sha256", "-v"], {"sha256": True, "verbose": True}),
        (["--compare-reference"], {"compare_reference": True}),
        (["--profile", "reference"], {"profile": "reference"}),
    ],
    ids=["header", "deep", "compare-reference", "reference-profile"],
)
def test_urls_give_the_cli_records(base_url: str, flags: List[str], opts: Dict[str, Any]) -> None:
    urls = _urls(base_url)
    want, summary = run_cli(flags, urls)
    got = [stcheck.record(u, **opts) for u in urls]
    assert got == want
    assert stcheck.dask.summarize(got) == summary
    statuses = {r["data"]["status"] for r in got}
    assert {"valid", "invalid", "io_error"} <= statuses
    assert all(r["data"].get("mode") in ("remote", None) for r in got if r["type"] == "file")
    shards = [s for r in got if r["type"] == "index" for s in r["data"]["shards"] if "mode" in s]
    assert shards and all(s["mode"] == "remote" for s in shards)
    if opts.get("compare_reference") or opts.get("profile") == "reference":
        # The reference crate's verdict, from each header and the announced length.
        files = [r["data"] for r in got if r["type"] == "file" and r["data"]["status"] != "io_error"]
        files += [s for r in got if r["type"] == "index" for s in r["data"]["shards"] if "mode" in s]
        assert files and all(f["reference"]["verdict"] in ("accept", "reject") for f in files)


def test_check_and_validate_by_url(base_url: str) -> None:
    valid = next(c for c in CASES if c["kind"] == "file" and c["verdict"] == "accept")
    report = stcheck.check(f"{base_url}/{valid['path']}")
    assert report.valid and report.mode == "remote" and report.path.startswith("http://127.0.0.1")
    invalid = next(c for c in CASES if c["kind"] == "file" and c["verdict"] == "reject" and not c["deep"])
    with pytest.raises(stcheck.SafetensorsError) as info:
        stcheck.validate(f"{base_url}/{invalid['path']}")
    assert info.value.rule == invalid["rules"][0]
    with pytest.raises(stcheck.ReadError) as missing:
        stcheck.check(f"{base_url}/no/such.safetensors")
    assert "404" in str(missing.value)
    assert stcheck.is_url("HTTPS://127.0.0.1/x") and not stcheck.is_url("model.safetensors")


#: Secrets planted in addresses: user information, a presigned query, a fragment.
_SECRETS = ("alicesecretuser", "hunter2pass", "SIGabc123secret", "fragsecret99")


def test_no_secret_of_an_address_reaches_python(base_url: str) -> None:
    """Issue 19: user information, a query and a fragment are never shown: not in records,
    reports, exception messages (also the loader's refusal of a URL and the tree walk's),
    their records, their repr or their pickle."""
    import pickle

    valid = next(c for c in CASES if c["kind"] == "file" and c["verdict"] == "accept")
    invalid = next(c for c in CASES if c["kind"] == "file" and c["verdict"] == "reject" and not c["deep"])
    host = base_url[len("http://"):]
    query = "?X-Amz-Signature=SIGabc123secret&X-Amz-Credential=SIGabc123secret#fragsecret99"
    urls = [
        f"{base_url}/{valid['path']}{query}",
        f"{base_url}/{invalid['path']}{query}",
        f"http://alicesecretuser:hunter2pass@{host}/{valid['path']}",
        f"http://alicesecretuser:hunter2pass@127.0.0.1:1/x.safetensors{query}",
        f"{base_url}/no/such.safetensors.index.json{query}",
    ]
    shown: List[str] = []
    for url in urls:
        shown.append(repr(stcheck.record(url, verbose=True)))
        shown.append(repr(stcheck.records([url])))
        try:
            report = stcheck.validate(url)
            shown.append(repr(report.to_dict()))
        except (stcheck.SafetensorsError, stcheck.ReadError) as e:
            shown.extend([str(e), repr(e), repr(getattr(e, "record", None)), repr(e.args)])
            shown.append(repr(pickle.loads(pickle.dumps(e)).__dict__))
        # The loader refuses URLs by name: the name is shown without its secrets too.
        loaders = (
            lambda: stcheck.load_file(url),
            lambda: stcheck.safe_open(url, "np"),
            lambda: stcheck.check_tree([url]),
            lambda: stcheck.records_tree([url]),
        )
        for load in loaders:
            try:
                shown.append(repr(load()))
            except (stcheck.SafetensorsError, stcheck.ReadError, ValueError) as e:
                shown.extend([str(e), repr(e), repr(e.args)])
    text = "\n".join(shown)
    for secret in _SECRETS:
        assert secret not in text, secret
    assert "?..." in text  # the query is shown as present, without its values


def test_a_manifest_of_urls_scans_to_parquet(base_url: str, tmp_path: Any) -> None:
    """The worked example of docs/python.md: a manifest of URLs (one per line) scanned into
    Parquet rows, resumable, equal to the CLI's records for the same URLs."""
    pytest.importorskip("pyarrow")
    import json

    import pyarrow.parquet as pq

    urls = _urls(base_url)
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("\n".join(urls) + "\n")
    targets = [line for line in manifest.read_text().splitlines() if line]
    summary = stcheck.dask.scan_to_parquet(targets, tmp_path / "scan", batch_size=7)
    want, want_summary = run_cli([], urls)
    assert summary == want_summary
    rows = {r["target"]: r for p in (tmp_path / "scan").glob("part-*.parquet") for r in pq.read_table(p).to_pylist()}
    assert [json.loads(rows[u]["record"]) for u in urls] == want
    # Resuming a finished scan checks nothing more and gives the same summary.
    assert stcheck.dask.scan_to_parquet(targets, tmp_path / "scan", batch_size=7) == want_summary


class _Hub(http.server.BaseHTTPRequestHandler):
    """A hub listing one repository, ``org/repo`` at ``main``, of two weight files; every path
    asked for is noted in ``seen``."""

    seen: List[str] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.seen.append(self.path)
        path = self.path.split("?")[0]
        if path == "/api/models/org/repo/revision/main":
            body = b'{"id": "org/repo", "sha": "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00", "siblings": []}'
        elif path == "/api/models/org/repo/tree/c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00":
            body = (
                b'[{"type": "file", "oid": "1", "size": 96, "path": "a.safetensors"},'
                b' {"type": "file", "oid": "2", "size": 96, "path": "b.safetensors"}]'
            )
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Repo-Commit", "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_whole_repository_is_refused_by_check_before_anything_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`check` gives one report: a repository on the hub names several files, so it is a
    ValueError that names `check_tree`, decided from the listing alone (no file is fetched),
    and the columnar batch says the same."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.delenv("HF_TOKEN", raising=False)
        for call in (stcheck.check, stcheck.record, lambda t: stcheck.dask.check_batch([t])):
            _Hub.seen.clear()
            with pytest.raises(ValueError, match=r"names 2 targets .*check_tree"):
                call("hf://org/repo")
            assert _Hub.seen and not [p for p in _Hub.seen if "/resolve/" in p], _Hub.seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)


def _tls_server(tmp_path: Any) -> Tuple[http.server.ThreadingHTTPServer, threading.Thread]:
    """An HTTPS server on 127.0.0.1 whose certificate no root the run trusts signed."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-subj", "/CN=127.0.0.1", "-days", "1"],
        check=True, capture_output=True, timeout=120,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.handle_error = lambda *args: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    return server, thread


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test's certificate")
def test_a_404_a_timeout_and_a_tls_failure_are_three_documented_codes(base_url: str, tmp_path: Any) -> None:
    # A listening socket that accepts no connection: the request is never answered.
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    tls, thread = _tls_server(tmp_path)
    urls = [
        f"{base_url}/no/such.safetensors",
        f"http://127.0.0.1:{silent.getsockname()[1]}/slow.safetensors",
        f"https://127.0.0.1:{tls.server_address[1]}/model.safetensors",
    ]
    try:
        got = [stcheck.record(u, timeout=1)["data"] for u in urls]
        assert [(d["status"], d["read_error"], d.get("http_status")) for d in got] == [
            ("io_error", "http_status", 404),
            ("io_error", "timeout", None),
            ("io_error", "tls", None),
        ]
        with pytest.raises(stcheck.ReadError) as info:
            stcheck.check(urls[0])
        assert info.value.read_error == "http_status" and info.value.http_status == 404
        with pytest.raises(stcheck.ReadError) as info:
            stcheck.check(urls[2])
        assert info.value.read_error == "tls" and info.value.http_status is None
    finally:
        silent.close()
        tls.shutdown()
        tls.server_close()
        thread.join(30)


class _Drip(http.server.BaseHTTPRequestHandler):
    """Answers every request with the first bytes of a file and then drips the rest, one byte
    at a time, until the client leaves (a write fails) or the test ends; counts the requests it
    got and the most it was answering at once."""

    protocol_version = "HTTP/1.1"
    lock = threading.Lock()
    in_flight = 0
    most = 0
    requests = 0
    stop = threading.Event()

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        cls = type(self)
        with cls.lock:
            cls.requests += 1
            cls.in_flight += 1
            cls.most = max(cls.most, cls.in_flight)
        try:
            self.send_response(206)
            self.send_header("Content-Range", "bytes 0-65535/100000000")
            self.send_header("Content-Length", "65536")
            self.end_headers()
            # A header of 60,000 bytes: the drip never brings all of it.
            self.wfile.write((60000).to_bytes(8, "little"))
            self.wfile.flush()
            # One byte every 0.1 s: above no minimum speed, so only a deadline ends it (the
            # bound of 1,200 bytes is a hang guard).
            for _ in range(1200):
                if cls.stop.wait(0.1):
                    break
                self.wfile.write(b" ")
                self.wfile.flush()
        except OSError:
            pass  # the client gave up and closed the connection
        finally:
            with cls.lock:
                cls.in_flight -= 1


@pytest.mark.parametrize(
    "count,url_jobs,call",
    [(8, None, "records"), (12, 4, "check_batch")],
    ids=["8-urls-default-jobs-records", "12-urls-4-jobs-check_batch"],
)
def test_a_batch_checks_its_urls_concurrently_and_they_share_one_deadline(
    count: int, url_jobs: Any, call: str
) -> None:
    """Issue 35: a batch's URLs were checked one after another, each with its own deadline (8
    dripping URLs at ``timeout=5``: 40 s). Now ``url_jobs`` (default 64) are in flight at once,
    and all share one deadline: when the first ``url_jobs`` time out, the deadline of every
    other URL of the batch has passed too, so they are not fetched at all. Counted in the
    server, not timed: exactly ``url_jobs`` requests, all in flight together, and every URL an
    ``io_error`` record of the batch's deadline."""
    jobs = min(count, url_jobs or 64)
    _Drip.in_flight, _Drip.most, _Drip.requests = 0, 0, 0
    _Drip.stop.clear()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Drip)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    urls = [f"http://127.0.0.1:{server.server_address[1]}/f{i}.safetensors" for i in range(count)]
    # Generous: the jobs' first requests must all be under way before it passes.
    opts: Dict[str, Any] = {"timeout": 10}
    if url_jobs is not None:
        opts["url_jobs"] = url_jobs
    try:
        if call == "records":
            got = [r["data"] for r in stcheck.records(urls, **opts)]
        else:
            cols = stcheck.dask.check_batch(urls, opts)
            got = [json.loads(line)["data"] for line in cols["record"]]
    finally:
        _Drip.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(30)
    assert (_Drip.most, _Drip.requests) == (jobs, jobs)
    assert [d["path"] for d in got] == urls
    assert all(d["status"] == "io_error" and d["read_error"] == "timeout" for d in got), got
    assert all("all the addresses of this call" in d["io_error"] for d in got), got


#: The commit of the integrity hub's repositories.
_C = "c1" * 20


class _IntegrityHub(http.server.BaseHTTPRequestHandler):
    """A hub whose repositories ``org/NAME`` hold one LFS file, ``model.safetensors``: ``repos``
    maps NAME to (the bytes served, the listing's ``lfs.oid``, the ``X-Linked-Etag``)."""

    repos: Dict[str, Tuple[bytes, str, str]] = {}

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: Dict[str, str]) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        import json

        parts = self.path.split("?")[0].strip("/").split("/")
        commit = {"X-Repo-Commit": _C}
        if parts[:2] == ["api", "models"] and parts[3] in self.repos:
            served, listed, _ = self.repos[parts[3]]
            if parts[4] == "revision":
                body = json.dumps({"id": f"org/{parts[3]}", "sha": _C, "siblings": []})
            else:
                lfs = {"oid": listed, "size": len(served), "pointerSize": 134}
                entry = {"type": "file", "oid": "1", "size": len(served), "path": "model.safetensors", "lfs": lfs}
                body = json.dumps([entry])
            return self._send(200, body.encode(), {**commit, "Content-Type": "application/json"})
        if len(parts) == 5 and parts[2] == "resolve" and parts[1] in self.repos and parts[4] == "model.safetensors":
            served, _, etag = self.repos[parts[1]]
            headers = {**commit, "X-Linked-Etag": f'"{etag}"'}
            start, end = 0, len(served) - 1
            asked = (self.headers.get("Range") or "").removeprefix("bytes=")
            if asked:
                a, _, b = asked.partition("-")
                start, end = int(a), min(int(b) if b else end, end)
                headers["Content-Range"] = f"bytes {start}-{end}/{len(served)}"
            return self._send(206 if asked else 200, served[start : end + 1], headers)
        self._send(404, b"", {})


def test_the_same_file_and_published_ids_give_the_clis_verdict_by_every_route(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Issue 35: one integrity decision. The listing's lfs.oid, the X-Linked-Etag and a hash
    the caller gives (``expect_sha256=``) are compared as the CLI compares them, through
    hf://org/repo, hf://org/repo@rev/FILE, a plain URL and a local path."""
    import hashlib

    valid = next(c for c in CASES if c["kind"] == "file" and c["verdict"] == "accept" and not c["deep"])
    data = open(valid["file"], "rb").read()
    real = hashlib.sha256(data).hexdigest()
    other = hashlib.sha256(b"another file").hexdigest()
    evil = data[:-1] + bytes([data[-1] ^ 0x40])
    _IntegrityHub.repos = {
        "one": (data, real, real),
        "tampered": (evil, real, real),
        "disagree": (data, real, other),
    }
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _IntegrityHub)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.delenv("HF_TOKEN", raising=False)

    def outcome(record: Dict[str, Any]) -> Tuple[str, Any]:
        d = record["data"]
        return d["status"], (d.get("error") or {}).get("rule")

    try:
        for name, want in [
            ("one", ("valid", None)),
            ("tampered", ("invalid", "INTEGRITY-SHA256")),
            ("disagree", ("invalid", "INTEGRITY-SHA256")),
        ]:
            plain = f"{endpoint}/org/{name}/resolve/main/model.safetensors"
            routes = [
                ({"sha256": True}, ["--sha256"], f"hf://org/{name}"),
                ({"sha256": True}, ["--sha256"], f"hf://org/{name}@main/model.safetensors"),
                ({"expect_sha256": real}, ["--expect-sha256", real], plain),
            ]
            for opts, flags, target in routes:
                got = stcheck.record(target, **opts)
                assert outcome(got) == want, (target, got)
                cli, _ = run_cli(flags, [target])
                assert [outcome(r) for r in cli] == [want], (target, cli)
                sources = [p["source"] for p in got["data"].get("published_sha256", [])]
                assert "X-Linked-Etag" in sources, got
                if "expect_sha256" in opts:
                    assert sources[-1] == "expect_sha256", got
        # A local path: the caller's id alone; the loader's check refuses the file as well.
        path = tmp_path / "model.safetensors"
        path.write_bytes(data)
        assert stcheck.check(path, expect_sha256=real.upper()).valid
        bad = stcheck.record(str(path), expect_sha256=other)
        assert outcome(bad) == ("invalid", "INTEGRITY-SHA256")
        assert bad["data"]["published_sha256"] == [{"source": "expect_sha256", "sha256": other}]
        assert "expect_sha256 publishes" in bad["data"]["error"]["message"]
        with pytest.raises(stcheck.SafetensorsError):
            stcheck.load_file(path, expect_sha256=other)
        # One hash, one file: a directory of several and a bad hash are refused.
        (tmp_path / "b.safetensors").write_bytes(data)
        with pytest.raises(ValueError, match="expect_sha256= gives the SHA-256 of one file"):
            stcheck.records_tree([tmp_path], expect_sha256=real)
        # A batch of several targets too (records, lines, the Dask partitions' columns).
        with pytest.raises(ValueError, match="expect_sha256= gives the SHA-256 of one file"):
            stcheck.records([str(path), data], expect_sha256=real)
        assert outcome(stcheck.records([data], expect_sha256=real)[0])[0] == "valid"
        with pytest.raises(ValueError, match="is not a SHA-256"):
            stcheck.check(path, expect_sha256="abc")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)
