// Every corpus file and sharded set, checked by the package and by the CLI: the same record
// (verdict, rule, kind, offset, tensor, message, warnings, totals), whichever way the bytes
// arrive: whole, as the header and the file's length, through a Blob in small slices.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import {
  PKG, fileCases, indexCases, cli, comparable, corpusBytes, headBytes, listing, shardReader,
} from "./helpers.mjs";

const st = await import(join(PKG, "node.js"));
const paths = fileCases.map((c) => c.path);

test("the corpus has files and sets", () => {
  assert.ok(fileCases.length > 300, `${fileCases.length} file cases`);
  assert.ok(indexCases.length >= 10, `${indexCases.length} index cases`);
});

test("checkHeader on whole files: the CLI's record, and the manifest's verdict", () => {
  const oracle = cli([], paths);
  let valid = 0;
  for (const c of fileCases) {
    const want = oracle.get(c.path);
    assert.ok(want, `the CLI wrote no record for ${c.path}`);
    const got = st.checkHeader(corpusBytes(c.path), undefined, { path: c.path });
    assert.equal(got.path, c.path);
    assert.deepEqual(comparable(got), comparable(want), c.path);
    if (c.verdict === "accept" && !c.deep) assert.equal(got.status, "valid", c.path);
    if (c.verdict === "reject" && !c.deep) {
      assert.equal(got.status, "invalid", c.path);
      assert.ok(c.acceptable_rules?.includes(got.error.rule) ?? c.rules.includes(got.error.rule), `${c.path}: ${got.error.rule}`);
    }
    if (got.status === "valid") valid += 1;
  }
  assert.ok(valid > 100);
});

test("checkHeader on the header and the file's length only: the CLI's header check", () => {
  const oracle = cli([], paths);
  for (const c of fileCases) {
    const bytes = corpusBytes(c.path);
    const head = headBytes(bytes);
    const got = st.checkHeader(head, bytes.length, { path: c.path });
    assert.deepEqual(comparable(got), comparable(oracle.get(c.path)), c.path);
  }
});

test("checkBlob, header only: the CLI's record; deep with SHA-256 in 4 KiB chunks: stcheck --deep --sha256", async () => {
  const plain = cli([], paths);
  const deep = cli(["--deep", "--sha256"], paths);
  let hashed = 0;
  let chunks = 0;
  for (const c of fileCases) {
    const blob = new Blob([corpusBytes(c.path)]);
    const got = await st.checkBlob(blob, { path: c.path });
    assert.deepEqual(comparable(got), comparable(plain.get(c.path)), c.path);
    const seen = [];
    const d = await st.checkBlob(blob, { path: c.path, deep: true, sha256: true, chunkSize: 4096, onProgress: (p) => seen.push(p.bytes) });
    assert.deepEqual(comparable(d), comparable(deep.get(c.path)), `${c.path} (deep)`);
    if (d.deep?.sha256) {
      hashed += 1;
      assert.equal(seen.at(-1), blob.size, `${c.path}: progress reaches the end`);
    }
    chunks += seen.length;
  }
  assert.ok(hashed > 100, `${hashed} files hashed`);
  assert.ok(chunks > fileCases.length);
});

test("the portable profile: the CLI's records", () => {
  const oracle = cli(["--profile", "portable"], paths);
  let misread = 0;
  for (const c of fileCases) {
    const got = st.checkHeader(corpusBytes(c.path), undefined, { profile: "portable", path: c.path });
    assert.deepEqual(comparable(got), comparable(oracle.get(c.path)), c.path);
    if (got.portable && !got.portable.portable) misread += 1;
  }
  assert.ok(misread > 0, "some corpus files are not portable");
});

test("the reference crate's verdict is left out of the WebAssembly build, with the reason", () => {
  // Compiled for wasm32 its usize is 32 bits: on these corpus files its verdict differs from
  // the 64-bit reference the CLI reports, so the package refuses the options instead.
  const bytes = corpusBytes(paths[0]);
  for (const options of [{ compareReference: true }, { profile: "reference" }]) {
    assert.throws(() => st.checkHeader(bytes, undefined, options), (e) => {
      assert.ok(e instanceof st.UsageError);
      assert.match(e.message, /left out of the WebAssembly build: compiled for wasm32 its sizes and offsets are 32-bit/);
      return true;
    });
  }
});

test("checkIndex on every sharded set: the CLI's index record, shard by shard", async () => {
  for (const deep of [false, true]) {
    const oracle = cli(deep ? ["--deep", "--sha256"] : [], indexCases.map((c) => c.path));
    for (const c of indexCases) {
      // Shards as Blobs for the header check, as bytes in memory for the deep one.
      const got = await st.checkIndex(corpusBytes(c.path), shardReader(c.path, st.NotCheckedError, { asBlob: !deep }), {
        path: c.path,
        listing: listing(c.path),
        deep,
        sha256: deep,
      });
      const want = oracle.get(c.path);
      assert.ok(want, c.path);
      assert.deepEqual(comparable(got), comparable(want), `${c.path}${deep ? " (deep)" : ""}`);
      if (c.verdict === "accept") assert.equal(got.status, "valid", c.path);
      if (c.verdict === "reject") {
        assert.equal(got.status, "invalid", c.path);
        assert.ok(c.acceptable_rules.includes(got.errors[0].rule), `${c.path}: ${got.errors[0].rule}`);
      }
    }
  }
});

test("checkIndex: a shard that cannot be read makes the set not checked, as the CLI's io_error", async () => {
  const c = indexCases.find((x) => x.verdict === "accept");
  const got = await st.checkIndex(corpusBytes(c.path), async () => { throw new Error("disk on fire"); }, { path: c.path });
  assert.equal(got.status, "io_error");
  assert.match(got.io_error, /disk on fire/);
  const missing = await st.checkIndex(corpusBytes(c.path), () => null, { path: c.path });
  assert.equal(missing.status, "invalid");
  assert.equal(missing.errors[0].rule, "INDEX-SHARD-MISSING");
  assert.equal(missing.shards[0].status, "missing");
});
