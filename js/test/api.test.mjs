// The package's own behaviour: options resolved by the gate (named as JS users write them),
// typed errors, rule texts, and bytes that are not enough to check.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { CORPUS, PKG, cliPath, corpusBytes } from "./helpers.mjs";

const st = await import(join(PKG, "node.js"));

test("a valid file: its tensors, parameters and dtypes", () => {
  const r = st.checkHeader(corpusBytes("../examples/model.safetensors"), undefined, { verbose: true });
  assert.equal(r.status, "valid");
  assert.equal(r.tensors, 3);
  assert.equal(r.parameters, 25);
  assert.deepEqual(r.by_dtype.map((d) => [d.dtype, d.parameters]), [["U8", 16], ["F16", 9]]);
  assert.equal(r.tensor_list.length, 3);
  assert.equal(r.error, null);
});

test("an invalid file: the record's error, and assertValid's typed error", () => {
  const r = st.checkHeader(corpusBytes("../examples/duplicate-name.safetensors"));
  assert.equal(r.status, "invalid");
  assert.equal(r.error.rule, "JSON-DUPLICATE-KEY");
  assert.equal(r.error.offset, 0x4b);
  assert.equal(r.error.tensor, "decoder.weight");
  assert.throws(() => st.assertValid(r), (e) => {
    assert.ok(e instanceof st.ValidationError);
    assert.ok(e instanceof st.StcheckError);
    assert.equal(e.rule, "JSON-DUPLICATE-KEY");
    assert.equal(e.offset, 0x4b);
    assert.equal(e.tensor, "decoder.weight");
    assert.match(e.message, /error JSON-DUPLICATE-KEY: tensor "decoder.weight": duplicate tensor name \(at offset 0x4b\)/);
    return true;
  });
  assert.throws(() => st.checkHeader(corpusBytes("../examples/duplicate-name.safetensors"), { throwOnInvalid: true }), st.ValidationError);
});

test("options are resolved by the gate and named as JS users write them", () => {
  const bytes = corpusBytes("../examples/model.safetensors");
  assert.throws(() => st.checkHeader(bytes, undefined, { allow: ["LAYOUT-ALIGN"], deny: ["layout-align"] }),
    (e) => e instanceof st.UsageError && e.message === "allow LAYOUT-ALIGN and deny LAYOUT-ALIGN exclude each other");
  assert.throws(() => st.checkHeader(bytes, undefined, { allow: ["JSON-DUPLICATE-KEY"] }), /errors cannot be allowed/);
  assert.throws(() => st.checkHeader(bytes, undefined, { deny: ["LAYOUT-ALING"] }), /did you mean LAYOUT-ALIGN/);
  assert.throws(() => st.checkHeader(bytes, undefined, { profile: "lenient" }), st.UsageError);
  assert.throws(() => st.checkHeader(bytes, undefined, { profile: "portable", refusalsAreErrors: true, portableTo: ["no-such-reader"] }), /portableTo: unknown reader "no-such-reader"/);
  assert.throws(() => st.checkHeader(bytes, undefined, { refusalsAreErrors: true }), /refusalsAreErrors: true needs the portable profile/);
  assert.throws(() => st.checkHeader(bytes, bytes.length - 1), /fileLength: \d+ bytes, fewer than the \d+ bytes given/);
  assert.throws(() => st.checkHeader(bytes, undefined, { depp: true }), (e) => e instanceof st.UsageError && /unknown field `depp`/.test(e.message));
  assert.throws(() => st.checkHeader(bytes, -1), st.UsageError);
  assert.throws(() => st.checkHeader("not bytes"), st.UsageError);
  // Bytes and options both wrong: the options' error is the one thrown (checkHeader makes one
  // call into the module, and asks for the options' error first only then).
  assert.throws(() => st.checkHeader("not bytes", undefined, { depp: true }), /unknown field `depp`/);
  assert.throws(() => st.checkHeader(bytes, -1, { profile: "lenient" }), /profile/);
  // The module keeps the last options resolved: other options after them are resolved anew.
  assert.notEqual(st.checkHeader(bytes, undefined, { deep: true }).deep, undefined);
  assert.throws(() => st.checkHeader(bytes, undefined, { deep: true, depp: true }), /unknown field `depp`/);
  const verbose = st.checkHeader(bytes, undefined, { verbose: true });
  assert.ok(verbose.tensor_list !== undefined && verbose.deep === undefined);
  const plain = st.checkHeader(bytes, undefined, {});
  assert.ok(plain.tensor_list === undefined && plain.deep === undefined);
});

test("the CLI and JavaScript refuse the same option values in the same words", () => {
  // [CLI flags, JS options, the CLI's spelling and JavaScript's of the option named first].
  // JavaScript has no timeout, request budget or job count (its URLs are fetched by the
  // wrapper): the gate's value checks it shares with the CLI are these.
  const cases = [
    [["--profile", "lax"], { profile: "lax" }, ["--profile", "profile"]],
    [["--max-warnings-per-rule", "0"], { maxWarningsPerRule: 0 }, ["--max-warnings-per-rule", "maxWarningsPerRule"]],
    [["--max-warnings-per-rule", "-3"], { maxWarningsPerRule: -3 }, ["--max-warnings-per-rule", "maxWarningsPerRule"]],
    [["--max-header-size", "-1"], { maxHeaderSize: -1 }, ["--max-header-size", "maxHeaderSize"]],
    [["--portable-to", "no-such-reader"], { portableTo: ["no-such-reader"] }, ["--portable-to", "portableTo"]],
  ];
  const bytes = corpusBytes("../examples/model.safetensors");
  for (const [flags, options, [flag, key]] of cases) {
    const out = spawnSync(cliPath(), [...flags, "--", "../examples/model.safetensors"], { cwd: CORPUS, encoding: "utf8" });
    assert.equal(out.status, 2, `${flags}: ${out.stderr}`);
    const cli = out.stderr.split("\n")[0].replace(/^stcheck: /, "");
    assert.ok(cli.startsWith(`${flag}: `), cli);
    assert.throws(() => st.checkHeader(bytes, undefined, options),
      (e) => e instanceof st.UsageError && e.message === cli.replace(flag, key), `${flags}`);
  }
});

test("deny turns a warning into the error; allow hides it", () => {
  const bytes = corpusBytes("valid/layout/misaligned-f32.safetensors");
  const plain = st.checkHeader(bytes);
  assert.equal(plain.status, "valid");
  assert.ok(plain.warnings.some((w) => w.rule === "LAYOUT-ALIGN"));
  const denied = st.checkHeader(bytes, undefined, { deny: ["LAYOUT-ALIGN"] });
  assert.equal(denied.status, "invalid");
  assert.equal(denied.error.rule, "LAYOUT-ALIGN");
  assert.equal(denied.error.promoted_warning, true);
  const allowed = st.checkHeader(bytes, undefined, { allow: ["LAYOUT-ALIGN"] });
  assert.equal(allowed.warnings.length, 0);
});

test("bytes that end before the header does are not checked, never a verdict", () => {
  const bytes = corpusBytes("../examples/model.safetensors");
  assert.throws(() => st.checkHeader(bytes.subarray(0, 20), bytes.length), (e) => {
    assert.ok(e instanceof st.NotCheckedError);
    assert.match(e.message, /end before the check does/);
    return true;
  });
  // Without a length, the bytes are the whole file: a cut file is invalid.
  assert.equal(st.checkHeader(bytes.subarray(0, 20)).error.rule, "FRAME-HEADER-BOUNDS");
  // A deep check given only the header and the length needs the data.
  assert.throws(() => st.checkHeader(bytes.subarray(0, 8 + 200), bytes.length, { deep: true }), st.NotCheckedError);
});

test("checkBlob reads only the length field and the header unless deep", async () => {
  const bytes = corpusBytes("../examples/model.safetensors");
  const reads = [];
  class Spy extends Blob {
    slice(a, b) { reads.push([a, b]); return super.slice(a, b); }
  }
  const r = await st.checkBlob(new Spy([bytes]));
  assert.equal(r.status, "valid");
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  assert.deepEqual(reads, [[0, 8], [8, 8 + n]]);
  reads.length = 0;
  const d = await st.checkBlob(new Spy([bytes]), { sha256: true });
  assert.equal(reads.at(-1)[1] >= bytes.length, true);
  assert.match(d.deep.sha256, /^[0-9a-f]{64}$/);
});

test("explain gives a rule's SPEC text; rules lists them", () => {
  const t = st.explain("layout-align");
  assert.equal(t.rule, "LAYOUT-ALIGN");
  assert.equal(t.severity, "warning");
  assert.match(t.section, /^### LAYOUT-ALIGN/);
  assert.ok(t.summary.length > 10);
  assert.equal(st.explain("NO-SUCH-RULE"), null);
  const all = st.rules();
  assert.ok(all.includes("JSON-DUPLICATE-KEY") && all.includes("INDEX-SHARD-MISSING"));
  for (const id of all) assert.ok(st.explain(id), `${id} has a SPEC text`);
});

test("hostile bytes: no input ends the module", () => {
  let seed = 1;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const base = corpusBytes("../examples/model.safetensors");
  for (let i = 0; i < 3000; i++) {
    const b = new Uint8Array(base);
    for (let k = 0; k < 1 + Math.floor(rand() * 6); k++) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
    const cut = b.subarray(0, Math.floor(rand() * (b.length + 1)));
    for (const options of [{}, { profile: "portable" }, { sha256: true, denyNonfinite: true }]) {
      const r = st.checkHeader(cut, undefined, options);
      assert.ok(r.status === "valid" || r.status === "invalid");
    }
  }
});

test("checkIndex over range sources reads only each shard's length field and header", async () => {
  const dir = "valid/index/two-shards";
  const index = corpusBytes(`${dir}/model.safetensors.index.json`);
  const read = [];
  const readShard = (name) => {
    const bytes = corpusBytes(`${dir}/${name}`);
    return { size: bytes.length, read: (pos, n) => { read.push([name, pos, n]); return bytes.slice(pos, pos + n); } };
  };
  const r = await st.checkIndex(index, readShard, { path: `${dir}/model.safetensors.index.json` });
  assert.equal(r.status, "valid");
  assert.equal(r.shards.length, 2);
  for (const name of new Set(read.map((x) => x[0]))) {
    const bytes = corpusBytes(`${dir}/${name}`);
    const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
    assert.deepEqual(read.filter((x) => x[0] === name).map((x) => [x[1], x[2]]), [[0, 8], [8, n]], name);
  }
});

test("hostile indexes and streamed files: no input ends the module", async () => {
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const dir = "valid/index/two-shards";
  const base = corpusBytes(`${dir}/model.safetensors.index.json`);
  const shard = (name) => {
    try {
      return corpusBytes(`${dir}/${name}`);
    } catch {
      return null;
    }
  };
  const statuses = new Set();
  for (let i = 0; i < 400; i++) {
    const b = new Uint8Array(base);
    for (let k = 0; k < 1 + Math.floor(rand() * 4); k++) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
    const r = await st.checkIndex(b.subarray(0, Math.floor(rand() * (b.length + 1))), shard, { deep: rand() < 0.5 });
    statuses.add(r.status);
  }
  assert.ok([...statuses].every((x) => x === "valid" || x === "invalid"), [...statuses].join());
  assert.ok(statuses.has("invalid"));
  assert.equal((await st.checkIndex(base, shard)).status, "valid");
  const file = corpusBytes("../examples/model.safetensors");
  for (let i = 0; i < 300; i++) {
    const b = new Uint8Array(file);
    b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
    const r = await st.checkBlob(new Blob([b]), { sha256: true, denyNonfinite: true, chunkSize: 1 + Math.floor(rand() * 64) });
    assert.ok(r.status === "valid" || r.status === "invalid");
  }
});

// Issue 35: an index naming millions of missing shards made a record past the module's
// memory (the module aborted, then `session.free` threw a plain Error). Past the cap of
// shards one set may name, the set is not checked, before any shard is read.
test("an index naming more shards than the module checks in one set is not checked", async () => {
  const n = 100_001;
  const entries = [];
  for (let i = 0; i < n; i += 1) entries.push(`"t${i}":"s${i}.safetensors"`);
  const index = new TextEncoder().encode(`{"weight_map":{${entries.join(",")}}}`);
  let reads = 0;
  await assert.rejects(st.checkIndex(index, () => { reads += 1; return null; }), (e) => {
    assert.ok(e instanceof st.NotCheckedError, String(e));
    assert.match(e.message, /more than 100000 shards/);
    return true;
  });
  assert.equal(reads, 0);
  // At the cap, the set is checked: every shard missing.
  const at = new TextEncoder().encode(`{"weight_map":{${entries.slice(0, 100_000).join(",")}}}`);
  const r = await st.checkIndex(at, () => { reads += 1; return null; });
  assert.equal(reads, 100_000);
  assert.equal(r.status, "invalid");
});

// Issue 35: a header of 1.2 GB (allowed by a raised maxHeaderSize) took the module past its
// memory. Past the module's own bound the file is not checked, before the header is read.
test("a header longer than the module holds is not checked, before it is read", async () => {
  const n = 1_200_000_000;
  const first = new Uint8Array(512).fill(0x20);
  new DataView(first.buffer).setBigUint64(0, BigInt(n), true);
  first[8] = 0x7b; // "{"
  let asked = 0;
  const source = {
    size: n + 8,
    async read(pos, len) {
      asked += len;
      const out = new Uint8Array(Math.min(len, 1 << 20)).fill(0x20);
      if (pos < first.length) out.set(first.subarray(pos, Math.min(first.length, pos + out.length)));
      return out;
    },
  };
  const refused = (e) => {
    assert.ok(e instanceof st.NotCheckedError, String(e));
    assert.match(e.message, /the header is 1200000000 bytes long, more than the 268435456 bytes/);
    return true;
  };
  await assert.rejects(st.checkBlob(source, { maxHeaderSize: 2_000_000_000 }), refused);
  assert.ok(asked <= 512, `${asked} bytes asked for`);
  assert.throws(() => st.checkHeader(first, n + 8, { maxHeaderSize: 2_000_000_000 }), refused);
  // Under the default limit the same length field is the core's verdict, FRAME-HEADER-LIMIT.
  assert.equal(st.checkHeader(first, n + 8).error.rule, "FRAME-HEADER-LIMIT");
});

test("the module's hash seeds come from node:crypto, for import and require alike", () => {
  // The module's std has no randomness of its own (stcheck::seed_hashes): without seeds from
  // the platform, anyone could work out names that all collide in its tables. In a process of
  // its own, Node's webcrypto is counted before the package is loaded; one instance, one call.
  const file = join(CORPUS, "../examples/model.safetensors");
  const count = `
    const { webcrypto } = process.getBuiltinModule("node:crypto");
    const fill = webcrypto.getRandomValues.bind(webcrypto);
    globalThis.calls = 0;
    webcrypto.getRandomValues = (a) => { globalThis.calls += 1; return fill(a); };`;
  const report = `
    const r = st.checkHeader(new Uint8Array(process.getBuiltinModule("node:fs").readFileSync(${JSON.stringify(file)})));
    console.log(JSON.stringify({ calls: globalThis.calls, status: r.status }));`;
  const esm = `${count}
    const st = await import(${JSON.stringify(pathToFileURL(join(PKG, "node.js")).href)});${report}`;
  const cjs = `${count}
    const st = require(${JSON.stringify(join(PKG, "node.cjs"))});${report}`;
  for (const [name, args] of [["import", ["--input-type=module", "-e", esm]], ["require", ["-e", cjs]]]) {
    const out = spawnSync(process.execPath, args, { encoding: "utf8" });
    assert.equal(out.status, 0, `${name}: ${out.stderr}`);
    assert.deepEqual(JSON.parse(out.stdout), { calls: 1, status: "valid" }, name);
  }
});
