// A benchmark, not a test: checkHeader on headers of 1, 1,000 and 100,000 tensors, against
// JSON.parse of the same header bytes (the floor: decoding the JSON and nothing more) and
// against @huggingface/hub's parseSafetensorsMetadata on the same bytes (through a local
// fetch that answers its HEAD and range requests from memory, so no network is used).
// Also prints the .wasm size, raw and gzipped.
//
//   node js/bench/header.mjs            (after js/build.sh; js/bench/run.sh installs the hub package)

import { gzipSync } from "node:zlib";
import { readFileSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const PKG = process.env.STCHECK_JS_PKG ?? join(ROOT, "target/js-pkg");
const st = await import(join(PKG, "stcheck.js"));

let hub = null;
try {
  const where = process.env.HUB_MODULES ?? join(ROOT, "target/js-bench/node_modules");
  hub = await import(pathToFileURL(join(where, "@huggingface/hub/dist/index.js")).href);
} catch (e) {
  console.log(`@huggingface/hub not found (${e.message.split("\n")[0]}); run js/bench/run.sh to install it`);
}

/** A valid file of `n` F32 tensors of shape [2, 3], with its data (24 bytes each). */
function file(n) {
  const parts = [];
  for (let i = 0; i < n; i++) {
    parts.push(`"model.layers.${i}.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[${i * 24},${(i + 1) * 24}]}`);
  }
  let header = `{"__metadata__":{"format":"pt"},${parts.join(",")}}`;
  header += " ".repeat((8 - (header.length % 8)) % 8);
  const h = new TextEncoder().encode(header);
  const bytes = new Uint8Array(8 + h.length + n * 24);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(h.length), true);
  bytes.set(h, 8);
  return { bytes, headerLen: h.length };
}

function time(f, minMs = 1000) {
  // Warm up, then repeat until minMs has passed; the median of the runs.
  for (let i = 0; i < 3; i++) f();
  const runs = [];
  const end = performance.now() + minMs;
  while (performance.now() < end || runs.length < 5) {
    const t = performance.now();
    f();
    runs.push(performance.now() - t);
  }
  runs.sort((a, b) => a - b);
  return runs[Math.floor(runs.length / 2)];
}

async function timeAsync(f, minMs = 1000) {
  for (let i = 0; i < 3; i++) await f();
  const runs = [];
  const end = performance.now() + minMs;
  while (performance.now() < end || runs.length < 5) {
    const t = performance.now();
    await f();
    runs.push(performance.now() - t);
  }
  runs.sort((a, b) => a - b);
  return runs[Math.floor(runs.length / 2)];
}

/** A fetch answering the hub parser's requests for one file from memory. */
function localFetch(bytes) {
  return async (url, init = {}) => {
    const headers = new Headers(init.headers ?? {});
    const common = { etag: '"bench"', "x-repo-commit": "0".repeat(40) };
    if ((init.method ?? "GET") === "HEAD") {
      return new Response(null, { status: 200, headers: { ...common, "content-length": String(bytes.length) } });
    }
    const m = /bytes=(\d+)-(\d+)?/.exec(headers.get("range") ?? "");
    const a = m ? Number(m[1]) : 0;
    const b = m && m[2] !== undefined ? Math.min(Number(m[2]), bytes.length - 1) : bytes.length - 1;
    return new Response(bytes.slice(a, b + 1), {
      status: m ? 206 : 200,
      headers: { ...common, "content-range": `bytes ${a}-${b}/${bytes.length}`, "content-length": String(b - a + 1) },
    });
  };
}

const wasm = readFileSync(join(PKG, "wasm/stcheck_native_bg.wasm"));
console.log(`stcheck_native_bg.wasm: ${wasm.length} bytes raw, ${gzipSync(wasm, { level: 9 }).length} gzipped`);
console.log(`node ${process.version}; median of repeated runs, milliseconds per header\n`);
console.log("tensors   header bytes   JSON.parse   checkHeader   ratio   parseSafetensorsMetadata");
for (const n of [1, 1000, 100000]) {
  const { bytes, headerLen } = file(n);
  const head = bytes.subarray(0, 8 + headerLen);
  const text = new TextDecoder();
  const r = st.checkHeader(head, bytes.length);
  if (r.status !== "valid" || r.tensors !== n) throw new Error(`the bench file of ${n} tensors is ${r.status}`);
  const jp = time(() => JSON.parse(text.decode(head.subarray(8))));
  const ours = time(() => st.checkHeader(head, bytes.length));
  let theirs = "n/a";
  if (hub) {
    const fetch = localFetch(bytes);
    const args = { repo: "bench/model", path: "model.safetensors", fetch, hubUrl: "http://127.0.0.1:1" };
    const meta = await hub.parseSafetensorsMetadata(args);
    if (Object.keys(meta.header).length !== n + 1) throw new Error("the hub parser read another header");
    theirs = (await timeAsync(() => hub.parseSafetensorsMetadata(args))).toFixed(3);
  }
  console.log(
    `${String(n).padStart(7)}   ${String(headerLen).padStart(12)}   ${jp.toFixed(3).padStart(10)}   ${ours.toFixed(3).padStart(11)}   ${(ours / jp).toFixed(2).padStart(5)}   ${theirs.padStart(24)}`,
  );
}
