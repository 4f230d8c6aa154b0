// The npm tarball as a user gets it: installed with `npm install ./stcheck-V.tgz` into a fresh
// project, then used from Node's `import`, from Node's `require` (plain Node, no flags: the
// exports map's `node` entries), and from a bundle made by esbuild (npm) for the browser (its
// `browser` entry), loaded in headless Chromium. Needs no Rust and no build: the tarball in
// STCHECK_JS_TARBALL (js/test.sh packs it; .ci/release-user.sh takes the release's), npm and
// the registry for esbuild. The project: STCHECK_JS_PROJECT, default target/js-package-test.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

import { ROOT, CORPUS, manifest } from "./helpers.mjs";
import { launch, serve } from "./chromium.mjs";

const TARBALL = process.env.STCHECK_JS_TARBALL;
const PROJECT = resolve(process.env.STCHECK_JS_PROJECT ?? join(ROOT, "target/js-package-test"));
// The esbuild js/build.sh pins (one pin for the package's build and this test).
const ESBUILD = /^ESBUILD_VERSION="([^"]+)"/m.exec(readFileSync(join(ROOT, "js/build.sh"), "utf8"))[1];
const VALID = "valid/layout/mixed-aligned.safetensors";
const INVALID = "malformed/json/single-quotes.safetensors";
const want = (path) => manifest.cases.find((c) => c.path === path);

function run(cmd, args, cwd = PROJECT) {
  const out = spawnSync(cmd, args, { cwd, encoding: "utf8", maxBuffer: 1 << 26 });
  assert.equal(out.status, 0, `${cmd} ${args.join(" ")} exited ${out.status}:\n${out.stdout}\n${out.stderr}`);
  return out.stdout;
}

/** What a program printed as its last line, parsed: `{version, resolved, records}`. */
function result(stdout) {
  return JSON.parse(stdout.trim().split("\n").pop());
}

function assertVerdicts(records) {
  assert.equal(records.length, 2);
  assert.equal(records[0].status, "valid", JSON.stringify(records[0]));
  assert.equal(records[0].tensors, want(VALID).expected.tensors.length);
  assert.equal(records[1].status, "invalid", JSON.stringify(records[1]));
  assert.ok(want(INVALID).acceptable_rules.includes(records[1].error.rule), records[1].error.rule);
}

before(() => {
  assert.ok(TARBALL, "STCHECK_JS_TARBALL: the npm tarball to test (js/build.sh --pack makes one)");
  rmSync(PROJECT, { recursive: true, force: true });
  mkdirSync(PROJECT, { recursive: true });
  writeFileSync(join(PROJECT, "package.json"), JSON.stringify({ name: "stcheck-package-test", private: true }));
  run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", resolve(TARBALL), `esbuild@${ESBUILD}`]);
  cpSync(join(CORPUS, VALID), join(PROJECT, "valid.safetensors"));
  cpSync(join(CORPUS, INVALID), join(PROJECT, "invalid.safetensors"));
});

test("the tarball's exports map: types, node (import, require) and browser", () => {
  const pkg = JSON.parse(readFileSync(join(PROJECT, "node_modules/stcheck/package.json"), "utf8"));
  const dot = pkg.exports["."];
  assert.deepEqual(Object.keys(dot.node), ["import", "require"]);
  assert.equal(dot.node.import.default, "./node.js");
  assert.equal(dot.node.require.default, "./node.cjs");
  assert.equal(dot.browser.default, "./stcheck.js");
  const named = [dot.node.import.types, dot.node.import.default, dot.node.require.types, dot.node.require.default,
    dot.browser.types, dot.browser.default, dot.types, dot.default];
  for (const f of named) assert.ok(existsSync(join(PROJECT, "node_modules/stcheck", f)), `${f} is not in the tarball`);
  assert.ok(existsSync(join(PROJECT, "node_modules/stcheck/wasm/stcheck_native_bg.wasm")));
});

test("Node import (ESM): the node entry, checked synchronously", () => {
  writeFileSync(join(PROJECT, "esm.mjs"), `
import { readFileSync } from "node:fs";
import { checkHeader, version } from "stcheck";
const records = process.argv.slice(2).map((p) => checkHeader(readFileSync(p)));
console.log(JSON.stringify({ version, resolved: import.meta.resolve("stcheck"), records }));
`);
  const r = result(run(process.execPath, ["esm.mjs", "valid.safetensors", "invalid.safetensors"]));
  assert.match(r.resolved, /\/node_modules\/stcheck\/node\.js$/);
  assert.match(r.version, /^\d+\.\d+\.\d+/);
  assertVerdicts(r.records);
});

test("Node require (CommonJS): node.cjs, no top-level await in the way", () => {
  writeFileSync(join(PROJECT, "cjs.cjs"), `
const { readFileSync } = require("node:fs");
const st = require("stcheck");
const records = process.argv.slice(2).map((p) => st.checkHeader(readFileSync(p)));
let thrown = null;
try { st.assertValid(records[1]); } catch (e) { thrown = { name: e.name, rule: e.rule, isError: e instanceof st.StcheckError }; }
console.log(JSON.stringify({ version: st.version, resolved: require.resolve("stcheck"), records, thrown }));
`);
  const r = result(run(process.execPath, ["cjs.cjs", "valid.safetensors", "invalid.safetensors"]));
  assert.match(r.resolved, /\/node_modules\/stcheck\/node\.cjs$/);
  assert.match(r.version, /^\d+\.\d+\.\d+/);
  assertVerdicts(r.records);
  assert.deepEqual(r.thrown, { name: "ValidationError", rule: r.records[1].error.rule, isError: true });
});

let server;
let chromium;
after(async () => {
  try {
    await chromium?.close();
  } finally {
    await server?.close();
  }
});

test("a bundle by esbuild, in headless Chromium: the browser entry", { timeout: 120_000 }, async () => {
  const web = join(PROJECT, "web");
  const dist = join(PROJECT, "dist");
  mkdirSync(web, { recursive: true });
  writeFileSync(join(web, "app.mjs"), `
import { checkHeader, version } from "stcheck";
const records = [];
for (const f of ["valid.safetensors", "invalid.safetensors"]) {
  const bytes = new Uint8Array(await (await fetch(f)).arrayBuffer());
  records.push(checkHeader(bytes));
}
window.stcheckResult = { version, records };
`);
  run(join(PROJECT, "node_modules/.bin/esbuild"), ["web/app.mjs", "--bundle", "--format=esm", "--platform=browser",
    "--log-level=warning", "--metafile=dist/meta.json", "--outfile=dist/app.js"]);
  const inputs = Object.keys(JSON.parse(readFileSync(join(dist, "meta.json"), "utf8")).inputs);
  assert.ok(inputs.includes("node_modules/stcheck/stcheck.js"), inputs.join(", "));
  assert.ok(!inputs.some((i) => /node\.c?js$/.test(i)), inputs.join(", "));
  // The .wasm beside the bundle, where the browser entry looks for it.
  mkdirSync(join(dist, "wasm"), { recursive: true });
  cpSync(join(PROJECT, "node_modules/stcheck/wasm/stcheck_native_bg.wasm"), join(dist, "wasm/stcheck_native_bg.wasm"));
  cpSync(join(PROJECT, "valid.safetensors"), join(dist, "valid.safetensors"));
  cpSync(join(PROJECT, "invalid.safetensors"), join(dist, "invalid.safetensors"));
  writeFileSync(join(dist, "index.html"), `<!doctype html><meta charset="utf-8"><script type="module" src="app.js"></script>`);

  server = await serve(dist);
  chromium = await launch();
  await chromium.page.send("Page.navigate", { url: `${server.base}/` });
  const r = await chromium.waitFor("window.stcheckResult", 60_000);
  assert.match(r.version, /^\d+\.\d+\.\d+/);
  assertVerdicts(r.records);
});
