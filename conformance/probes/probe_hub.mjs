#!/usr/bin/env node
// Probe the Hub's JavaScript parser (reader `hub-js` of corpus/readers.json):
// parseSafetensorsMetadata({ ..., computeParametersCount: true }), as a model page calls it.
//
// Usage: node probe_hub.mjs --out DIR [--node-dir DIR] [--corpus DIR] [--large DIR]
//                           [--cases FILE] [--only ID...]
//
// Every case of corpus/manifest.json that strict accepts (with --large, also the large cases
// generated into that directory), and the sharded sets of conformance/probes/cases.json (built
// in memory; the large ones only with --large), are served by a local fetch (no network) and
// parsed. The answer is compared with what the file holds:
//
//   reads    the header's tensors (names, dtypes, shapes) and, for a sharded set, the
//            weight_map and every shard's tensors are as in the files, and parameterCount adds
//            up to the element count under the parser's own counting policy (scalars and
//            F8_E8M0 tensors are not parameters to it; see SPEC.md)
//   misread  the parse succeeds but one of those differs
//   refuse   the parser throws one of its own errors (SafetensorParseError,
//            SafetensorsIndexParseError)
//   crash    it throws anything else (RangeError, TypeError: an internal failure)
//
// Writes DIR/hub-js.json: {"reader", "version", "results": {case id: {"outcome", "detail"}}}.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const opts = { nodeDir: join(root, "target/conformance-node"), corpus: join(root, "corpus"), cases: join(here, "cases.json"), only: null };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--only") { opts.only = new Set(argv.slice(i + 1)); break; }
  const key = { "--out": "out", "--node-dir": "nodeDir", "--corpus": "corpus", "--large": "large", "--cases": "cases" }[a];
  if (!key || i + 1 >= argv.length) { console.error(`probe_hub: bad argument ${a}`); process.exit(2); }
  opts[key] = resolve(argv[++i]);
}
if (!opts.out) { console.error("probe_hub: --out DIR is required"); process.exit(2); }

const require = createRequire(join(opts.nodeDir, "package.json"));
const pkgVersion = JSON.parse(readFileSync(join(opts.nodeDir, "node_modules/@huggingface/hub/package.json"), "utf8")).version;
const hub = await import(pathToFileURL(require.resolve("@huggingface/hub").replace(/index\.js$/, "index.mjs")).href);

const HUB = "http://hub.probe.invalid";
const REPO = "probe/local";
const OWN_ERRORS = new Set(["SafetensorParseError", "SafetensorsIndexParseError"]);

// A local Hub: files by name, HEAD and ranged GET, the headers the parser needs.
function localFetch(files) {
  const prefix = `${HUB}/${REPO}/resolve/main/`;
  return async (input, init = {}) => {
    const url = input instanceof URL ? input.href : typeof input === "string" ? input : input.url;
    const common = { ETag: '"probe"', "X-Repo-Commit": "0".repeat(40), "Accept-Ranges": "bytes" };
    const path = url.startsWith(prefix) ? url.slice(prefix.length).split("?")[0] : null;
    let name = null;
    try { name = path === null ? null : decodeURIComponent(path); } catch { name = null; }
    const body = name === null ? undefined : files.get(name);
    if (!body) return new Response("not found", { status: 404, headers: { "X-Error-Code": "EntryNotFound" } });
    if ((init.method ?? "GET").toUpperCase() === "HEAD") {
      return new Response(null, { status: 200, headers: { ...common, "Content-Length": String(body.length) } });
    }
    const m = /^bytes=(\d+)-(\d*)$/.exec(new Headers(init.headers ?? {}).get("Range") ?? "");
    if (m) {
      const first = Number(m[1]);
      if (first >= body.length) return new Response(null, { status: 416, headers: { ...common, "Content-Range": `bytes */${body.length}` } });
      const last = m[2] === "" ? body.length - 1 : Math.min(Number(m[2]), body.length - 1);
      const slice = body.subarray(first, last + 1);
      return new Response(slice, { status: 206, headers: { ...common, "Content-Range": `bytes ${first}-${last}/${body.length}`, "Content-Length": String(slice.length) } });
    }
    return new Response(body, { status: 200, headers: { ...common, "Content-Length": String(body.length) } });
  };
}

async function parse(files, path) {
  try {
    const r = await hub.parseSafetensorsMetadata({ repo: { type: "model", name: REPO }, path, hubUrl: HUB, fetch: localFetch(files), computeParametersCount: true });
    return { ok: true, r };
  } catch (e) {
    const name = e?.name ?? "Error";
    return { ok: false, outcome: OWN_ERRORS.has(name) ? "refuse" : "crash", detail: `${name}: ${e?.message ?? e}` };
  }
}

// Expected: [{name, dtype, shape: [decimal strings]}]. The parser's count leaves out scalars
// and F8_E8M0 tensors (its documented policy), so that is what it must add up to.
function hubCount(tensors) {
  let n = 0n;
  for (const t of tensors) {
    if (t.shape.length === 0 || t.dtype === "F8_E8M0") continue;
    n += t.shape.reduce((a, d) => a * BigInt(d), 1n);
  }
  return n;
}

// The manifest's expected tensors, or only their count where it leaves the list out (files
// with no tensors, or with more than 1,000).
function expectedOf(e) {
  return e.tensors ?? Number(e.tensor_count);
}

function compareHeader(header, expected, where) {
  const got = Object.entries(header).filter(([k]) => k !== "__metadata__");
  if (typeof expected === "number") {
    return got.length === expected ? null : `${where}: ${got.length} tensors in the header, the file holds ${expected}`;
  }
  const want = new Map(expected.map((t) => [t.name, t]));
  if (got.length !== want.size) return `${where}: ${got.length} tensors in the header, the file holds ${want.size}`;
  for (const [name, info] of got) {
    const w = want.get(name);
    if (!w) return `${where}: unexpected tensor ${JSON.stringify(name)}`;
    if (String(info?.dtype) !== w.dtype) return `${where}: tensor ${JSON.stringify(name)}: dtype ${info?.dtype}, the file says ${w.dtype}`;
    const shape = (info?.shape ?? []).map((d) => String(d));
    if (shape.join(",") !== w.shape.join(",")) return `${where}: tensor ${JSON.stringify(name)}: shape [${shape.slice(0, 4)}], the file says [${w.shape.slice(0, 4)}]`;
  }
  return null;
}

function countOf(parameterCount) {
  let n = 0n;
  for (const v of Object.values(parameterCount ?? {})) n += BigInt(Math.round(v));
  return n;
}

async function probeFile(path, expected) {
  return probeBytes(readFileSync(path), expected);
}

async function probeBytes(bytes, expected) {
  const res = await parse(new Map([["model.safetensors", bytes]]), "model.safetensors");
  if (!res.ok) return res;
  const diff = compareHeader(res.r.header, expected, "header");
  if (diff) return { outcome: "misread", detail: diff };
  // With only a count known, the parameters are known only for a file with no tensors.
  if (typeof expected === "number" && expected !== 0) return { outcome: "reads", detail: "" };
  const got = countOf(res.r.parameterCount), want = typeof expected === "number" ? 0n : hubCount(expected);
  if (got !== want) return { outcome: "misread", detail: `parameterCount adds up to ${got}, the file holds ${want} (by the parser's policy)` };
  return { outcome: "reads", detail: "" };
}

// ---- Sharded sets of cases.json

function safetensors(tensors) {
  // tensors: [{name, dtype, shape: [numbers], bytes}]
  const header = {};
  let off = 0;
  for (const t of tensors) { header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + t.bytes] }; off += t.bytes; }
  let h = Buffer.from(JSON.stringify(header), "utf8");
  h = Buffer.concat([h, Buffer.alloc((8 - (h.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  return Buffer.concat([len, h, Buffer.alloc(off)]);
}

// The set as [{shard, tensors: [{name, dtype, shape, bytes}]}] in index order.
function setOf(c) {
  if (c.shards) return c.shards.map((s) => ({ shard: s.name, tensors: s.tensors.map((name) => ({ name, dtype: "F32", shape: [10], bytes: 40 })) }));
  const g = c.generate;
  const shards = Number(g.shards), count = Number(g.tensors), width = Number(g.name_length);
  const pad = (n) => String(n).padStart(5, "0");
  const out = Array.from({ length: shards }, (_, j) => ({ shard: `model-${pad(j + 1)}-of-${pad(shards)}.safetensors`, tensors: [] }));
  for (let i = 0; i < count; i++) out[i % shards].tensors.push({ name: `t${i}`.padEnd(width, "x"), dtype: "U8", shape: [0], bytes: 0 });
  return out;
}

async function probeSet(c) {
  const set = setOf(c);
  const files = new Map();
  const weightMap = {};
  let total = 0;
  for (const s of set) {
    files.set(s.shard, safetensors(s.tensors));
    for (const t of s.tensors) { Object.defineProperty(weightMap, t.name, { value: s.shard, enumerable: true }); total += t.bytes; }
  }
  files.set("model.safetensors.index.json", Buffer.from(JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap })));
  const res = await parse(files, "model.safetensors.index.json");
  if (!res.ok) return res;
  const { index, headers, parameterCount } = res.r;
  if (index.weight_map === undefined) return { outcome: "misread", detail: "index.weight_map is undefined" };
  const keys = Object.keys(index.weight_map);
  const want = set.flatMap((s) => s.tensors.map((t) => t.name));
  if (keys.length !== want.length) {
    const lost = want.filter((n) => !Object.hasOwn(index.weight_map, n)).slice(0, 3);
    return { outcome: "misread", detail: `index.weight_map has ${keys.length} entries, the index ${want.length}; missing ${JSON.stringify(lost)}` };
  }
  for (const s of set) {
    if (!Object.hasOwn(headers, s.shard)) return { outcome: "misread", detail: `shard ${JSON.stringify(s.shard)} not read` };
    const expected = s.tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape.map(String) }));
    const diff = compareHeader(headers[s.shard], expected, `shard ${JSON.stringify(s.shard)}`);
    if (diff) return { outcome: "misread", detail: diff };
  }
  const all = set.flatMap((s) => s.tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape.map(String) })));
  const got = countOf(parameterCount), wantCount = hubCount(all);
  if (got !== wantCount) return { outcome: "misread", detail: `parameterCount adds up to ${got}, the set holds ${wantCount}` };
  return { outcome: "reads", detail: "" };
}

// ---- Main

const manifest = JSON.parse(readFileSync(join(opts.corpus, "manifest.json"), "utf8"));
const jobs = [];
// Sharded sets (kind "index") name an index, not a safetensors file: not probed here.
for (const c of manifest.cases) if (c.expected && c.kind !== "index") jobs.push({ id: c.id, run: () => probeFile(join(opts.corpus, c.path), expectedOf(c.expected)) });
if (opts.large) for (const c of manifest.large) if (c.expected) jobs.push({ id: c.id, run: () => probeFile(join(opts.large, c.path), expectedOf(c.expected)) });
for (const c of JSON.parse(readFileSync(opts.cases, "utf8")).cases) {
  if (c.large && !opts.large) continue;
  if (c.shards || c.generate) jobs.push({ id: c.id, run: () => probeSet(c) });
  // Files of many zero-size tensors, built in memory (the sparse 2 GiB file is not probed here:
  // the parser reads only the header, and the header alone says nothing about the data).
  if (c.file?.zero_size_tensors) {
    const tensors = Array.from({ length: Number(c.file.zero_size_tensors) }, (_, i) => ({ name: `t${i}`, dtype: "U8", shape: [0], bytes: 0 }));
    const expected = tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: ["0"] }));
    jobs.push({ id: c.id, run: () => probeBytes(safetensors(tensors), expected) });
  }
}

const started = Date.now();
const results = {};
const counts = {};
for (const job of jobs) {
  if (opts.only && !opts.only.has(job.id)) continue;
  let r;
  try {
    r = await job.run();
  } catch (e) {
    console.error(`probe_hub: ${job.id}: the probe itself failed: ${e?.stack ?? e}`);
    process.exit(2);
  }
  results[job.id] = { outcome: r.outcome, detail: (r.detail ?? "").slice(0, 300) };
  counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
}
mkdirSync(opts.out, { recursive: true });
const sorted = Object.fromEntries(Object.keys(results).sort().map((k) => [k, results[k]]));
writeFileSync(join(opts.out, "hub-js.json"), JSON.stringify({ reader: "hub-js", version: pkgVersion, runtime: { node: process.version }, results: sorted }, null, 1) + "\n");
console.log(`hub-js ${pkgVersion}: ${Object.keys(results).length} cases ${JSON.stringify(counts)} in ${Math.round((Date.now() - started) / 1000)} s (node ${process.version})`);
