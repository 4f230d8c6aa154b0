// The demo page in a real browser: Debian's headless Chromium, driven over the DevTools
// protocol by the small client below (Node's WebSocket: run with --experimental-websocket on
// Node 20). A loopback server (127.0.0.1) serves target/js-pkg; the test sets a valid and an
// invalid corpus file in the page's file input and asserts the verdicts shown, and saves a
// screenshot of each state: target/js-demo-valid.png, target/js-demo-invalid.png.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { readFile, writeFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";

import { PKG, ROOT, CORPUS, cli } from "./helpers.mjs";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".json": "application/json" };

let server;
let base;
let browser;
let profileDir;
let page;

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

async function evaluate(expr) {
  const r = await page.send("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true });
  if (r.exceptionDetails) throw new Error(`${expr}: ${r.exceptionDetails.text}`);
  return r.result.value;
}

async function waitFor(expr, ms = 20_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await evaluate(expr);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${expr}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

before(async () => {
  server = createServer(async (req, res) => {
    const p = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname)).replace(/^(\.\.[/\\])+/, "");
    const file = join(PKG, p.endsWith("/") ? `${p}index.html` : p);
    if (!file.startsWith(PKG)) { res.writeHead(403); return res.end(); }
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
  base = `http://127.0.0.1:${server.address().port}`;

  profileDir = await mkdtemp(join(tmpdir(), "stcheck-chromium-"));
  browser = spawn(CHROMIUM, [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", `--user-data-dir=${profileDir}`, "--remote-debugging-port=0",
    "--remote-debugging-address=127.0.0.1", "--window-size=1100,900", "about:blank",
  ], { stdio: ["ignore", "ignore", "pipe"] });
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
  page = await connect(target.webSocketDebuggerUrl);
  await page.send("Page.enable");
  await page.send("Runtime.enable");
  await page.send("DOM.enable");
});

after(async () => {
  page?.close();
  if (browser && browser.exitCode === null) {
    const gone = new Promise((ok) => browser.once("exit", ok));
    browser.kill("SIGTERM");
    await Promise.race([gone, new Promise((ok) => setTimeout(ok, 5000))]);
    if (browser.exitCode === null) browser.kill("SIGKILL");
  }
  if (profileDir) await rm(profileDir, { recursive: true, force: true });
  await new Promise((ok) => server.close(ok));
});

async function choose(path) {
  const { result } = await page.send("Runtime.evaluate", { expression: "document.getElementById('file')" });
  await page.send("DOM.setFileInputFiles", { files: [path], objectId: result.objectId });
}

async function screenshot(name) {
  const { data } = await page.send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true });
  const out = join(ROOT, "target", name);
  await writeFile(out, Buffer.from(data, "base64"));
  return out;
}

test("the demo page checks a valid and an invalid file in the browser", { timeout: 90_000 }, async () => {
  await page.send("Page.navigate", { url: `${base}/demo/` });
  await waitFor("document.body && document.body.dataset.ready === 'yes'");
  assert.match(await evaluate("document.getElementById('version').textContent"), /^stcheck \d+\.\d+\.\d+/);

  // The CLI is the oracle of what the page shows.
  const validPath = "valid/layout/mixed-aligned.safetensors";
  const invalidPath = "malformed/json/single-quotes.safetensors";
  const oracle = cli(["-v"], [validPath, invalidPath]);
  const want = oracle.get(validPath);
  const fmt = new Intl.NumberFormat("en");
  await choose(join(CORPUS, validPath));
  await waitFor("document.getElementById('verdict').dataset.status === 'valid'");
  const valid = await evaluate("document.getElementById('verdict').textContent");
  assert.ok(valid.startsWith(`mixed-aligned.safetensors: valid, ${fmt.format(want.tensors)} tensors, ${fmt.format(want.parameters)} parameters (`), valid);
  assert.equal(await evaluate("document.querySelectorAll('#tensors tbody tr').length"), want.tensor_list.length);
  const validShot = await screenshot("js-demo-valid.png");

  await choose(join(CORPUS, invalidPath));
  await waitFor("document.getElementById('verdict').dataset.status === 'invalid'");
  const invalid = await evaluate("document.getElementById('verdict').textContent");
  const rule = oracle.get(invalidPath).error.rule;
  assert.equal(invalid, `single-quotes.safetensors: invalid, ${rule}`);
  assert.match(await evaluate("document.querySelector('.rule details pre').textContent"), new RegExp(`^### ${rule}\\b`));
  const invalidShot = await screenshot("js-demo-invalid.png");

  // A deep check: the progress bar, then the hash.
  await evaluate("document.getElementById('deep').checked = true");
  await choose(join(ROOT, "examples/model.safetensors"));
  await waitFor("document.getElementById('sha256')");
  assert.match(await evaluate("document.getElementById('sha256').textContent"), /^[0-9a-f]{64}$/);
  console.log(`screenshots: ${validShot}, ${invalidShot}`);
});
