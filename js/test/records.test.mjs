// Records cross from the module in a compact encoding (js/src/compact.rs), built into objects
// by the wrapper without a JSON text: they must be the objects JSON.parse makes of the CLI's
// JSON, for every corpus file with its tensor list and metadata, for hostile names (a key
// `__proto__`, line separators, characters beyond the BMP), for numbers past 2^32, and after
// the module's table of told keys is full.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";

import { PKG, fileCases, cli, cliPath, comparable, corpusBytes } from "./helpers.mjs";

const st = await import(join(PKG, "node.js"));

/** A safetensors file of `tensors` ([name, dtype, shape, [begin, end]]), the metadata
 * `pairs` ([key, value], or undefined for none) and `dataLen` bytes of data. Written as text:
 * a key `__proto__` is a key of the JSON, whatever a JavaScript object would make of it. */
function file(tensors, pairs, dataLen) {
  const str = JSON.stringify;
  const parts = [];
  if (pairs !== undefined) parts.push(`"__metadata__":{${pairs.map(([k, v]) => `${str(k)}:${str(v)}`).join(",")}}`);
  for (const [name, dtype, shape, offsets] of tensors) {
    parts.push(`${str(name)}:{"dtype":${str(dtype)},"shape":${str(shape)},"data_offsets":${str(offsets)}}`);
  }
  let text = `{${parts.join(",")}}`;
  text += " ".repeat((8 - (text.length % 8)) % 8);
  const h = new TextEncoder().encode(text);
  const bytes = new Uint8Array(8 + h.length + dataLen);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(h.length), true);
  bytes.set(h, 8);
  return bytes;
}

/** `stcheck --json [-v] -` on `bytes`: the record the CLI writes for them. */
function cliRecord(bytes, args = [], verbose = true) {
  const v = verbose ? ["-v"] : [];
  const out = spawnSync(cliPath(), ["--json", "--no-progress", ...v, ...args, "-"], { input: bytes, encoding: "utf8" });
  const line = out.stdout.split("\n").find((l) => l.startsWith('{"type":"file"'));
  assert.ok(line, `no record from the CLI: ${out.stderr}`);
  return JSON.parse(line).data;
}

test("verbose records of every corpus file: the CLI's, key for key", () => {
  const paths = fileCases.map((c) => c.path);
  const oracle = cli(["-v"], paths);
  for (const c of fileCases) {
    const got = st.checkHeader(corpusBytes(c.path), undefined, { path: c.path, verbose: true });
    assert.deepEqual(comparable(got), comparable(oracle.get(c.path)), c.path);
    // The same keys in the same order as JSON.parse of the CLI's line gives.
    assert.deepEqual(Object.keys(got), Object.keys(oracle.get(c.path)), c.path);
  }
});

test("hostile names: a key __proto__ is an own property, line separators and astral characters kept", () => {
  const metadata = [["__proto__", "p"], ["constructor", "c"], ["k\u2028\u{1F600}", "v\u0085\u2029\u{1F600}é"], ["", ""]];
  const names = ["__proto__", "\u{1F600}", "é".repeat(40), "x"];
  const tensors = names.map((n, i) => [n, "U8", [1], [i, i + 1]]);
  const bytes = file(tensors, metadata, names.length);
  const got = st.checkHeader(bytes, undefined, { verbose: true });
  assert.equal(got.status, "valid", JSON.stringify(got.error));
  assert.equal(Object.getPrototypeOf(got.metadata), Object.prototype);
  assert.ok(Object.hasOwn(got.metadata, "__proto__"));
  assert.equal(Object.getOwnPropertyDescriptor(got.metadata, "__proto__").value, "p");
  assert.deepEqual(Object.keys(got.metadata), Object.keys(JSON.parse(`{"__proto__":0,"constructor":0,"k\u2028\u{1F600}":0,"":0}`)));
  assert.equal(got.metadata["k\u2028\u{1F600}"], "v\u0085\u2029\u{1F600}é");
  assert.deepEqual(got.tensor_list.map((t) => t.name), names);
  const want = cliRecord(bytes);
  assert.deepEqual(comparable(got), comparable(want));
  // Twice, now with every key and short value told.
  assert.deepEqual(comparable(st.checkHeader(bytes, undefined, { verbose: true })), comparable(want));
  // A name holding a line separator is invalid: the error names it as the CLI does.
  const bad = file([["a\u2028b", "U8", [1], [0, 1]]], undefined, 1);
  const r = st.checkHeader(bad);
  assert.equal(r.error.rule, "NAME-CONTROL");
  // (Standard input stops at the error, so the CLI knows no size there.)
  assert.deepEqual({ ...comparable(r), size: null }, comparable(cliRecord(bad, [], false)));
});

test("numbers past 2^32 are the doubles JSON.parse reads", () => {
  // A header of one tensor whose data ends past 4 GiB (and one past 2^40), checked with the
  // file's length only.
  for (const big of [2 ** 32 + 24, 2 ** 40 + 3]) {
    const bytes = file([["w", "U8", [big], [0, big]]], undefined, 0);
    const got = st.checkHeader(bytes, bytes.length + big, { verbose: true });
    assert.equal(got.status, "valid", JSON.stringify(got.error));
    assert.equal(got.size, bytes.length + big);
    assert.equal(got.parameters, big);
    assert.deepEqual(got.tensor_list[0].data_offsets, [0, big]);
    assert.deepEqual(got.tensor_list[0].file_offsets, [bytes.length, bytes.length + big]);
    assert.deepEqual(got.by_dtype, [{ dtype: "U8", tensors: 1, parameters: big, bytes: big }]);
  }
});

test("after the table of told keys is full, records are still the CLI's", () => {
  // 5,000 distinct short metadata keys and values: more than the module tells (4,096).
  const metadata = [];
  for (let i = 0; i < 5000; i++) metadata.push([`m${i}`, `v${i}`]);
  const bytes = file([["w", "U8", [1], [0, 1]]], metadata, 1);
  const got = st.checkHeader(bytes, undefined, { verbose: true });
  assert.deepEqual(comparable(got), comparable(cliRecord(bytes)));
  const again = file([["other", "F16", [2], [0, 4]]], [["format", "pt"]], 4);
  assert.deepEqual(comparable(st.checkHeader(again, undefined, { verbose: true })), comparable(cliRecord(again)));
  const plain = st.checkHeader(corpusBytes("../examples/model.safetensors"));
  assert.equal(plain.status, "valid");
  assert.equal(plain.tensors, 3);
});
