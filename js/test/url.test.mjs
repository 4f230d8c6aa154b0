// checkUrl against loopback servers (127.0.0.1 only): the corpus served with and without
// Range support gives the CLI's records; misbehaving servers give NotCheckedError, never a
// verdict.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createNetServer } from "node:net";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { PKG, fileCases, cli, cliPath, comparable, corpusBytes } from "./helpers.mjs";

const st = await import(join(PKG, "node.js"));

/** Behaviours of the test server, chosen by the first path segment. */
const MODES = {
  // Honest servers.
  range: (req, res, bytes) => serveRange(req, res, bytes),
  norange: (req, res, bytes) => {
    res.writeHead(200, { "content-length": bytes.length });
    res.end(bytes);
  },
  // Misbehaving ones.
  missing: (req, res) => { res.writeHead(404); res.end("no"); },
  error: (req, res) => { res.writeHead(500); res.end(); },
  short: (req, res, bytes) => {
    // Announces the range it was asked for, then closes the connection early.
    const [a, b] = askedRange(req, bytes);
    res.writeHead(206, { "content-range": `bytes ${a}-${b}/${bytes.length}`, "content-length": b - a + 1 });
    res.write(bytes.subarray(a, a + Math.max(1, Math.floor((b - a + 1) / 2))));
    res.socket.destroy();
  },
  shrinks: (req, res, bytes) => {
    // The second request sees a file of another length.
    const [a, b] = askedRange(req, bytes);
    const total = a === 0 ? bytes.length : bytes.length + 10;
    res.writeHead(206, { "content-range": `bytes ${a}-${b}/${total}`, "content-length": b - a + 1 });
    res.end(bytes.subarray(a, b + 1));
  },
  wrongstart: (req, res, bytes) => {
    const [a, b] = askedRange(req, bytes);
    const s = a === 0 ? 0 : a - 1;
    res.writeHead(206, { "content-range": `bytes ${s}-${b}/${bytes.length}`, "content-length": b - s + 1 });
    res.end(bytes.subarray(s, b + 1));
  },
  nocontentrange: (req, res, bytes) => {
    const [a, b] = askedRange(req, bytes);
    res.writeHead(206, { "content-length": b - a + 1 });
    res.end(bytes.subarray(a, b + 1));
  },
  gzip: (req, res, bytes) => {
    res.writeHead(200, { "content-length": bytes.length, "content-encoding": "br" });
    res.end(bytes);
  },
  nolength: (req, res, bytes) => {
    res.writeHead(200, { "transfer-encoding": "chunked" });
    res.end(bytes);
  },
  longer: (req, res, bytes) => {
    // A 206 whose body goes on past its Content-Range (no Content-Length: chunked).
    const [a, b] = askedRange(req, bytes);
    res.writeHead(206, { "content-range": `bytes ${a}-${b}/${bytes.length}` });
    res.end(Buffer.concat([bytes.subarray(a, b + 1), Buffer.alloc(16, 0x20)]));
  },
  trickle: (req, res, bytes) => {
    // Ranges of 3 bytes whatever is asked: bounded by the number of range requests.
    const [a] = askedRange(req, bytes);
    const b = Math.min(a + 2, bytes.length - 1);
    res.writeHead(206, { "content-range": `bytes ${a}-${b}/${bytes.length}`, "content-length": b - a + 1 });
    res.end(bytes.subarray(a, b + 1));
  },
};

function askedRange(req, bytes) {
  const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
  if (!m) return [0, bytes.length - 1];
  return [Number(m[1]), Math.min(Number(m[2]), bytes.length - 1)];
}

function serveRange(req, res, bytes) {
  const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
  if (!m) {
    res.writeHead(200, { "content-length": bytes.length });
    return res.end(bytes);
  }
  const a = Number(m[1]);
  if (a >= bytes.length) {
    res.writeHead(416, { "content-range": `bytes */${bytes.length}` });
    return res.end();
  }
  const b = Math.min(Number(m[2]), bytes.length - 1);
  res.writeHead(206, { "content-range": `bytes ${a}-${b}/${bytes.length}`, "content-length": b - a + 1 });
  res.end(bytes.subarray(a, b + 1));
}

let server;
let base;
const log = [];

before(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    const [, mode, ...rest] = url.pathname.split("/");
    const path = decodeURIComponent(rest.join("/"));
    log.push({ mode, path, range: req.headers.range ?? null, secret: req.headers["x-secret"] ?? null });
    let bytes;
    try {
      bytes = corpusBytes(path);
    } catch {
      res.writeHead(404);
      return res.end();
    }
    (MODES[mode] ?? MODES.missing)(req, res, bytes);
  });
  server.keepAliveTimeout = 1000;
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(async () => {
  server.closeAllConnections?.();
  await new Promise((ok) => server.close(ok));
});

const url = (mode, path) => `${base}/${mode}/${path.split("/").map(encodeURIComponent).join("/")}`;

test("the corpus over HTTP with Range: the CLI's records, in one or two requests", { timeout: 120_000 }, async () => {
  const oracle = cli([], fileCases.map((c) => c.path));
  for (const c of fileCases) {
    log.length = 0;
    const got = await st.checkUrl(url("range", c.path));
    assert.deepEqual(comparable(got), comparable(oracle.get(c.path)), c.path);
    assert.equal(got.url, url("range", c.path));
    assert.ok(got.cost.requests >= 1 && got.cost.requests <= 2, `${c.path}: ${got.cost.requests} requests`);
    assert.equal(got.cost.requests, log.length);
    assert.ok(log.every((l) => l.range !== null));
  }
});

test("deep checks over HTTP stream the data: stcheck --deep --sha256", { timeout: 120_000 }, async () => {
  const oracle = cli(["--deep", "--sha256"], fileCases.map((c) => c.path));
  for (const c of fileCases) {
    for (const mode of ["range", "norange"]) {
      const got = await st.checkUrl(url(mode, c.path), { deep: true, sha256: true, firstFetch: 100 });
      assert.deepEqual(comparable(got), comparable(oracle.get(c.path)), `${mode} ${c.path}`);
    }
  }
});

test("a server without Range: the body is read as far as the header, in one request", { timeout: 120_000 }, async () => {
  const oracle = cli([], fileCases.map((c) => c.path));
  for (const c of fileCases) {
    log.length = 0;
    const got = await st.checkUrl(url("norange", c.path));
    assert.deepEqual(comparable(got), comparable(oracle.get(c.path)), c.path);
    assert.equal(got.cost.requests, 1, c.path);
  }
});

test("misbehaving servers: not checked, with the reason", { timeout: 60_000 }, async () => {
  const path = "valid/layout/mixed-aligned.safetensors";
  const big = fileCases.find((c) => corpusBytes(c.path).length > 4096 && c.verdict === "accept").path;
  const cases = [
    ["missing", path, {}, /unexpected HTTP 404/],
    ["error", path, {}, /unexpected HTTP 500/],
    ["short", big, { firstFetch: 4096 }, /body ended|request failed|terminated/],
    ["shrinks", path, { firstFetch: 16 }, /the file changed/],
    ["wrongstart", path, { firstFetch: 16 }, /a range we did not ask for/],
    ["nocontentrange", path, {}, /without a valid Content-Range/],
    ["gzip", path, {}, /Content-Encoding br/],
    ["nolength", path, {}, /did not say how long the file is/],
    ["trickle", path, { firstFetch: 3 }, /ranges are too short/],
    ["longer", path, {}, /longer than the \d+ bytes of its Content-Range/],
    ["longer", path, { deep: true }, /longer than the \d+ bytes of its Content-Range/],
  ];
  for (const [mode, p, options, message] of cases) {
    await assert.rejects(st.checkUrl(url(mode, p), options), (e) => {
      assert.ok(e instanceof st.NotCheckedError, `${mode}: ${e}`);
      assert.match(e.message, message, mode);
      return true;
    }, mode);
  }
  // Nothing listens here: the request fails, not checked.
  await assert.rejects(st.checkUrl("http://127.0.0.1:9/x.safetensors"), st.NotCheckedError);
});

test("a custom fetch and headers are used", async () => {
  const path = "valid/layout/mixed-aligned.safetensors";
  const seen = [];
  const myFetch = (u, init) => {
    seen.push(new Headers(init.headers).get("x-token"));
    return fetch(u, init);
  };
  const r = await st.checkUrl(url("range", path), { fetch: myFetch, headers: { "x-token": "t1" } });
  assert.equal(r.status, "valid");
  assert.ok(seen.length >= 1 && seen.every((t) => t === "t1"));
});

test("no secret of an address is shown: user information, query and fragment", { timeout: 60_000 }, async () => {
  const valid = "valid/layout/mixed-aligned.safetensors";
  const query = "?X-Amz-Signature=SIGjs123secret&X-Amz-Credential=SIGjs123secret#fragjs99";
  const secrets = ["SIGjs123secret", "fragjs99", "alicejsuser", "hunter2js"];
  const shown = [];
  // A presigned query on a server that answers: the record shows the address with `?...`.
  const r = await st.checkUrl(url("range", valid) + query);
  assert.equal(r.status, "valid");
  shown.push(JSON.stringify(r));
  assert.equal(r.url, url("range", valid) + "?...");
  assert.equal(r.path, r.url);
  // Failures: fetch refuses user information; a missing file and a closed port fail.
  const host = base.slice("http://".length);
  for (const u of [
    `http://alicejsuser:hunter2js@${host}/range/${valid}${query}`,
    url("missing", valid) + query,
    `http://alicejsuser:hunter2js@127.0.0.1:9/x.safetensors${query}`,
  ]) {
    await assert.rejects(st.checkUrl(u), (e) => {
      assert.ok(e instanceof st.NotCheckedError, String(e));
      shown.push(e.message, String(e), JSON.stringify(e));
      return true;
    });
  }
  const text = shown.join("\n");
  for (const s of secrets) assert.ok(!text.includes(s), `${s} in ${text}`);
});

test("in Node, redirects are followed by the wrapper and headers go only to the URL's own origin", { timeout: 60_000 }, async () => {
  const valid = "valid/layout/mixed-aligned.safetensors";
  // Another origin (another port): a redirector in front of the test server, which records
  // the headers every request brings.
  const seen = [];
  const hops = new Map();
  const front = createServer((req, res) => {
    seen.push({ url: req.url, secret: req.headers["x-secret"] ?? null, auth: req.headers.authorization ?? null });
    if (req.url.startsWith("/loop")) {
      res.writeHead(302, { location: `/loop${Number(req.url.slice(5) || 0) + 1}` });
      return res.end();
    }
    if (req.url === "/nowhere") {
      res.writeHead(302);
      return res.end();
    }
    hops.set(req.url, (hops.get(req.url) ?? 0) + 1);
    res.writeHead(307, { location: url("range", valid) });
    res.end();
  });
  await new Promise((ok) => front.listen(0, "127.0.0.1", ok));
  const other = `http://127.0.0.1:${front.address().port}`;
  try {
    log.length = 0;
    const r = await st.checkUrl(`${other}/x.safetensors`, { headers: { "x-secret": "s3cr3t", authorization: "Bearer t0k" } });
    assert.equal(r.status, "valid");
    // Its own origin got the headers; the test server (another origin) never did.
    assert.ok(seen.length >= 1 && seen.every((s) => s.secret === "s3cr3t" && s.auth === "Bearer t0k"), JSON.stringify(seen));
    assert.ok(log.length >= 1 && log.every((l) => l.secret === null), JSON.stringify(log));
    assert.equal(r.cost.redirects, seen.length);
    assert.equal(r.cost.requests, seen.length + log.length);
    // A redirect loop and a redirect to nowhere: not checked, with the reason.
    await assert.rejects(st.checkUrl(`${other}/loop0`), (e) => {
      assert.ok(e instanceof st.NotCheckedError, String(e));
      assert.match(e.message, /more than 10 redirects/);
      return true;
    });
    await assert.rejects(st.checkUrl(`${other}/nowhere`), /without a Location header/);
  } finally {
    front.closeAllConnections?.();
    await new Promise((ok) => front.close(ok));
  }
});

// Issue 29: "could not check" is typed as the CLI's records type it: a 404, a timeout and a
// TLS failure (a certificate no root trusts) give three documented reasons.
test("a 404, a timeout and a TLS failure are three documented reasons", { timeout: 60_000 }, async () => {
  const reason = async (u, options = {}) => {
    try {
      await st.checkUrl(u, options);
    } catch (e) {
      assert.ok(e instanceof st.NotCheckedError, String(e));
      return [e.reason, e.httpStatus ?? null];
    }
    assert.fail(`${u}: checked`);
  };
  // A listening socket that answers nothing: the signal's deadline passes.
  const held = [];
  const silent = createNetServer((socket) => held.push(socket));
  await new Promise((ok) => silent.listen(0, "127.0.0.1", ok));
  // An HTTPS server whose certificate (made here) no root the run trusts signed.
  const dir = mkdtempSync(join(tmpdir(), "stcheck-tls-"));
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "k.pem"),
    "-out", join(dir, "c.pem"), "-subj", "/CN=127.0.0.1", "-days", "1"], { stdio: "ignore", timeout: 120_000 });
  const tls = createHttpsServer({ key: readFileSync(join(dir, "k.pem")), cert: readFileSync(join(dir, "c.pem")) },
    (req, res) => { res.writeHead(404); res.end(); });
  tls.on("tlsClientError", () => {});
  await new Promise((ok) => tls.listen(0, "127.0.0.1", ok));
  try {
    assert.deepEqual(await reason(url("missing", "valid/layout/mixed-aligned.safetensors")), ["http_status", 404]);
    assert.deepEqual(await reason(`http://127.0.0.1:${silent.address().port}/x.safetensors`,
      { signal: AbortSignal.timeout(1000) }), ["timeout", null]);
    assert.deepEqual(await reason(`https://127.0.0.1:${tls.address().port}/x.safetensors`), ["tls", null]);
  } finally {
    for (const s of held) s.destroy();
    await new Promise((ok) => silent.close(ok));
    tls.closeAllConnections?.();
    await new Promise((ok) => tls.close(ok));
    rmSync(dir, { recursive: true, force: true });
  }
});

// Issue 35: in Node, a check without a signal has the CLI's default deadline (120 s for the
// header, 3600 s when the data is read), not none. The clock is node:test's mock timers and
// the server a fetch that never answers, so nothing here waits for real time.
test("without a signal, checkUrl in Node has the CLI's default deadline; a signal given replaces it", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const signals = [];
  const silent = (u, init) => new Promise((ok, fail) => {
    signals.push(init.signal);
    init.signal?.addEventListener("abort", () => fail(init.signal.reason), { once: true });
  });
  const watch = (p) => {
    const state = { settled: false };
    p.then(() => { state.settled = true; }, () => { state.settled = true; });
    return state;
  };
  const flush = () => new Promise((ok) => setImmediate(ok));
  const target = "http://127.0.0.1:9/x.safetensors";
  for (const [options, seconds] of [[{}, 120], [{ deep: true }, 3600], [{ sha256: true }, 3600]]) {
    const p = st.checkUrl(target, { ...options, fetch: silent });
    const state = watch(p);
    await flush();
    assert.ok(signals.at(-1) instanceof AbortSignal, "the request has a signal");
    t.mock.timers.tick(seconds * 1000 - 1);
    await flush();
    assert.equal(state.settled, false, `${JSON.stringify(options)}: settled before ${seconds} s`);
    t.mock.timers.tick(1);
    await assert.rejects(p, (e) => {
      assert.ok(e instanceof st.NotCheckedError, String(e));
      assert.equal(e.reason, "timeout");
      return true;
    });
  }
  const controller = new AbortController();
  const p = st.checkUrl(target, { fetch: silent, signal: controller.signal });
  const state = watch(p);
  await flush();
  assert.equal(signals.at(-1), controller.signal);
  t.mock.timers.tick(3600 * 1000);
  await flush();
  assert.equal(state.settled, false, "the default deadline applied beside the signal given");
  controller.abort();
  await assert.rejects(p, st.NotCheckedError);
});

// Issue 35: one integrity decision for every route. The same file and published ids (the
// server's X-Linked-Etag, the caller's expectSha256) give the CLI's verdict: the CLI checks
// the same URL with --sha256 / --expect-sha256.
test("published ids: the X-Linked-Etag and expectSha256 give the CLI's verdict", { timeout: 120_000 }, async () => {
  const path = "valid/layout/mixed-aligned.safetensors";
  const bytes = corpusBytes(path);
  const real = createHash("sha256").update(bytes).digest("hex");
  const other = createHash("sha256").update("another file").digest("hex");
  // /ETAG/name: the file, with that X-Linked-Etag ("-": none).
  const hub = createServer((req, res) => {
    const etag = decodeURIComponent(new URL(req.url, "http://x").pathname.split("/")[1]);
    if (etag !== "-") res.setHeader("x-linked-etag", `"${etag}"`);
    serveRange(req, res, bytes);
  });
  await new Promise((ok) => hub.listen(0, "127.0.0.1", ok));
  const at = (etag) => `http://127.0.0.1:${hub.address().port}/${encodeURIComponent(etag)}/model.safetensors`;
  const outcome = (r) => [r.status, r.error?.rule ?? null, (r.published_sha256 ?? []).map((p) => p.sha256)];
  // The CLI's record of one URL, run without blocking this process (its server answers it).
  const oracle = (args) => new Promise((ok, fail) => {
    execFile(cliPath(), ["--json", "--no-progress", ...args], { maxBuffer: 1 << 26 }, (err, stdout, stderr) => {
      if (err && err.code !== 1) return fail(new Error(`stcheck exited ${err.code}: ${stderr}`));
      const file = stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l)).find((r) => r.type === "file");
      return file ? ok(file.data) : fail(new Error(`no file record: ${stdout}`));
    });
  });
  try {
    for (const [etag, expect, want] of [
      ["-", real, ["valid", null, [real]]],
      ["-", other, ["invalid", "INTEGRITY-SHA256", [other]]],
      [real, undefined, ["valid", null, [real]]],
      [real, real.toUpperCase(), ["valid", null, [real, real]]],
      [real, other, ["invalid", "INTEGRITY-SHA256", [real, other]]],
      [other, undefined, ["invalid", "INTEGRITY-SHA256", [other]]],
      [other, real, ["invalid", "INTEGRITY-SHA256", [other, real]]],
      [real.slice(1), undefined, ["invalid", "INTEGRITY-SHA256", [real.slice(1)]]],
      ["b1".repeat(20), undefined, ["valid", null, []]],
    ]) {
      const options = expect === undefined ? { sha256: true } : { expectSha256: expect };
      const got = await st.checkUrl(at(etag), options);
      assert.deepEqual(outcome(got), want, `${etag} ${expect}`);
      const flags = expect === undefined ? ["--sha256"] : ["--expect-sha256", expect];
      assert.deepEqual(outcome(await oracle([...flags, at(etag)])), want, `CLI: ${etag} ${expect}`);
      if (expect !== undefined && want[0] === "invalid") {
        assert.match(got.error.message, new RegExp(`expectSha256 publishes ${expect.toLowerCase()}`));
        assert.deepEqual(got.published_sha256.at(-1), { source: "expectSha256", sha256: expect.toLowerCase() });
      }
    }
    // Bytes in memory: the caller's id alone.
    const ok = await st.checkBlob(new Blob([bytes]), { expectSha256: real });
    assert.deepEqual(outcome(ok), ["valid", null, [real]]);
    const bad = await st.checkBlob(new Blob([bytes]), { expectSha256: other });
    assert.deepEqual(outcome(bad), ["invalid", "INTEGRITY-SHA256", [other]]);
    // A set has several files: one hash cannot be each one's.
    await assert.rejects(st.checkIndex(new Uint8Array(), () => null, { expectSha256: real }),
      (e) => e instanceof st.UsageError && /expectSha256 gives the SHA-256 of one file/.test(e.message));
    await assert.rejects(st.checkUrl(at("-"), { expectSha256: "abc" }),
      (e) => e instanceof st.UsageError && /expectSha256: "abc" is not a SHA-256/.test(e.message));
  } finally {
    hub.closeAllConnections?.();
    await new Promise((ok) => hub.close(ok));
  }
});
