// The `validate` fuzz property on a 32-bit target (issue 32): every input of the kept fuzz
// corpora that is a file (fuzz/corpus/<target>/ of the byte-level targets), checked by the
// package (the core compiled to wasm32, where usize is 32 bits) and by the CLI (x86-64): the
// same record, header-only and deep with SHA-256. And the property itself, on the wasm32
// side: no panic, every offset within the input, every tensor inside the file, the same
// record twice, and denyWarnings promotes exactly the first warning.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

import { PKG, ROOT, cli, comparable } from "./helpers.mjs";

const st = await import(join(PKG, "node.js"));
// The targets whose inputs are files as they are (stream's end in a chunk schedule,
// fast_path's lack the length field, the others are not files).
const TARGETS = ["validate", "differential", "deep_scan", "portable", "reference_profile", "file_source"];
const inputs = [];
for (const t of TARGETS) {
  const dir = join(ROOT, "fuzz/corpus", t);
  if (!existsSync(dir)) continue;
  for (const name of readdirSync(dir).sort()) inputs.push(join(dir, name));
}

function checkOffsets(record, len, path) {
  const findings = [record.error, ...(record.warnings ?? [])].filter(Boolean);
  for (const f of findings) {
    if (f.offset !== null) assert.ok(f.offset <= len, `${path}: ${f.rule} at ${f.offset} of ${len} bytes`);
  }
  for (const t of record.tensor_list ?? []) {
    assert.ok(t.file_offsets[0] <= t.file_offsets[1] && t.file_offsets[1] <= len, `${path}: tensor ${t.name}`);
  }
}

test("the kept fuzz corpora: wasm32 gives the x86-64 CLI's records, and the validate property holds", () => {
  assert.ok(inputs.length > 200, `${inputs.length} inputs`);
  const plain = cli(["-v"], inputs);
  const deep = cli(["-v", "--deep", "--sha256"], inputs);
  let promoted = 0;
  let valid = 0;
  for (const path of inputs) {
    const bytes = new Uint8Array(readFileSync(path));
    const got = st.checkHeader(bytes, undefined, { path, verbose: true });
    assert.deepEqual(comparable(got), comparable(plain.get(path)), path);
    assert.deepEqual(st.checkHeader(bytes, undefined, { path, verbose: true }), got, `${path}: twice`);
    checkOffsets(got, bytes.length, path);
    const d = st.checkHeader(bytes, undefined, { path, verbose: true, deep: true, sha256: true });
    assert.deepEqual(comparable(d), comparable(deep.get(path)), `${path} (deep)`);
    checkOffsets(d, bytes.length, path);
    const strict = st.checkHeader(bytes, undefined, { path, verbose: true, denyWarnings: true });
    if (got.status === "valid" && got.warnings.length > 0) {
      const w = got.warnings[0];
      assert.equal(strict.status, "invalid", path);
      assert.deepEqual([strict.error.rule, strict.error.offset, strict.error.promoted_warning], [w.rule, w.offset, true], path);
      promoted += 1;
    } else {
      assert.equal(strict.status, got.status, path);
      assert.deepEqual(strict.error, got.error, path);
    }
    if (got.status === "valid") valid += 1;
  }
  assert.ok(valid > 20 && promoted > 0, `${valid} valid, ${promoted} with a warning promoted`);
});
