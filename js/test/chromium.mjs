// Headless Chromium (Debian's) driven over the DevTools protocol by a small client (Node's
// WebSocket: run node with --experimental-websocket on Node 20), and a loopback static file
// server: what the browser tests share (browser.test.mjs: the demo page; package.test.mjs: a
// bundle of the installed package).

import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".json": "application/json" };

/** A DevTools connection: send(method, params) -> result; events to waiters. */
async function connect(wsUrl) {
  if (typeof WebSocket === "undefined") throw new Error("no WebSocket: run node with --experimental-websocket (Node 20)");
  const ws = new WebSocket(wsUrl);
  await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = () => fail(new Error("DevTools connection failed")); });
  let id = 0;
  const pending = new Map();
  const listeners = [];
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id && pending.has(msg.id)) {
      const { ok, fail } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) fail(new Error(`${msg.error.message}`));
      else ok(msg.result);
    } else if (msg.method) {
      for (const l of listeners) l(msg);
    }
  };
  return {
    send(method, params = {}) {
      id += 1;
      ws.send(JSON.stringify({ id, method, params }));
      return new Promise((ok, fail) => pending.set(id, { ok, fail }));
    },
    on(f) { listeners.push(f); },
    close() { ws.close(); },
  };
}

/** Serve the files under `dir` on 127.0.0.1 (a free port): { base, close() }. */
export async function serve(dir) {
  const server = createServer(async (req, res) => {
    const p = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname)).replace(/^(\.\.[/\\])+/, "");
    const file = join(dir, p.endsWith("/") ? `${p}index.html` : p);
    if (!file.startsWith(dir)) { res.writeHead(403); return res.end(); }
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    // Open keep-alive connections (the browser's) would hold close() and the test process.
    close: () => new Promise((ok) => { server.close(ok); server.closeAllConnections(); }),
  };
}

/**
 * Start headless Chromium with a fresh profile and attach to its page:
 * { page, evaluate(expr), waitFor(expr, ms), close() }. Exceptions thrown in the page are
 * collected in `errors` (a test names them when it fails).
 */
export async function launch() {
  const profileDir = await mkdtemp(join(tmpdir(), "stcheck-chromium-"));
  const browser = spawn(CHROMIUM, [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", `--user-data-dir=${profileDir}`, "--remote-debugging-port=0",
    "--remote-debugging-address=127.0.0.1", "--window-size=1100,900", "about:blank",
  ], { stdio: ["ignore", "ignore", "pipe"], detached: true });
  // Chromium's own group (detached): its helpers (zygote, renderer, crashpad) are signalled
  // with it, so none outlives close() and writes into the profile while it is removed.
  const signalAll = (sig) => {
    try { process.kill(-browser.pid, sig); } catch { /* the group is gone already */ }
  };
  const port = await new Promise((ok, fail) => {
    let err = "";
    const timer = setTimeout(() => fail(new Error(`Chromium did not start: ${err}`)), 30_000);
    browser.stderr.on("data", (d) => {
      err += d;
      const m = /DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)\//.exec(err);
      if (m) { clearTimeout(timer); ok(Number(m[1])); }
    });
    browser.on("exit", (code) => fail(new Error(`Chromium exited ${code}: ${err}`)));
  });
  const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const target = list.find((t) => t.type === "page");
  const page = await connect(target.webSocketDebuggerUrl);
  const errors = [];
  page.on((msg) => {
    if (msg.method === "Runtime.exceptionThrown") errors.push(msg.params.exceptionDetails?.exception?.description ?? msg.params.exceptionDetails?.text);
  });
  await page.send("Page.enable");
  await page.send("Runtime.enable");
  await page.send("DOM.enable");

  async function evaluate(expr) {
    const r = await page.send("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error(`${expr}: ${r.exceptionDetails.text}`);
    return r.result.value;
  }

  // A hang guard, not a timing assumption: polls until the page says it is done.
  async function waitFor(expr, ms = 20_000) {
    const end = Date.now() + ms;
    for (;;) {
      const v = await evaluate(expr);
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${expr}${errors.length ? `; page errors: ${errors.join("; ")}` : ""}`);
      await new Promise((ok) => setTimeout(ok, 50));
    }
  }

  async function close() {
    page.close();
    if (browser.exitCode === null && browser.signalCode === null) {
      const gone = new Promise((ok) => browser.once("exit", ok));
      signalAll("SIGTERM");
      // A hang guard: the group is killed after it either way.
      await Promise.race([gone, new Promise((ok) => setTimeout(ok, 10_000))]);
    }
    signalAll("SIGKILL");
    // A helper being killed may still have been writing: rm retries on ENOTEMPTY. A profile
    // left behind in the temporary directory is said, not a failure of the test.
    try {
      await rm(profileDir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
    } catch (e) {
      console.warn(`chromium.mjs: the profile ${profileDir} was not removed: ${e.message}`);
    }
  }

  return { page, errors, evaluate, waitFor, close };
}
