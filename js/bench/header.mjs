// A benchmark, not a test: checkHeader on headers of 1, 1,000 and 100,000 tensors, against
// JSON.parse of the same header bytes (the floor: decoding the JSON and nothing more) and
// against @huggingface/hub's parseSafetensorsMetadata on the same bytes (through a local
// fetch that answers its HEAD and range requests from memory, so no network is used).
// Also prints the .wasm size, raw and gzipped. With STCHECK_JS_PKG_BEFORE=dir (another build
// of the package, e.g. main's), its checkHeader is timed in the same rounds, for a before and
// after from one run.
//
//   node js/bench/header.mjs            (after js/build.sh; js/bench/run.sh installs the hub package)
//   ROUNDS=7 node js/bench/header.mjs   (rounds per size; default 5)

import { gzipSync } from "node:zlib";
import { cpus, loadavg } from "node:os";
import { readFileSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const PKG = resolve(process.env.STCHECK_JS_PKG ?? join(ROOT, "target/js-pkg"));
const st = await import(pathToFileURL(join(PKG, "node.js")).href);
const BEFORE = process.env.STCHECK_JS_PKG_BEFORE ? resolve(process.env.STCHECK_JS_PKG_BEFORE) : null;
const before = BEFORE ? await import(pathToFileURL(join(BEFORE, "node.js")).href) : null;
const ROUNDS = Number(process.env.ROUNDS ?? 5);

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

/**
 * Milliseconds per call of each of `fs`, measured side by side: samples of `batch` calls in a
 * row (about a quarter of a millisecond, so a call of a microsecond is not lost in the clock),
 * the functions taking turns, so a slow moment of a busy machine falls on all of them alike.
 * After `minMs`: `ms`, the median sample of each; `ratio`, the median over turns of each one's
 * sample divided by the first's in the same turn (the ratio the machine's load disturbs least).
 */
function timeTogether(fs, minMs = 2000) {
  const batch = fs.map((f) => {
    let n = 1;
    for (;;) {
      const t = performance.now();
      for (let i = 0; i < n; i++) f();
      if (performance.now() - t >= 0.25 || n >= 1 << 20) return n;
      n *= 2;
    }
  });
  const runs = fs.map(() => []);
  const end = performance.now() + minMs;
  while (performance.now() < end || runs[0].length < 15) {
    fs.forEach((f, k) => {
      const t = performance.now();
      for (let i = 0; i < batch[k]; i++) f();
      runs[k].push((performance.now() - t) / batch[k]);
    });
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  return {
    ms: runs.map(median),
    ratio: runs.map((r) => median(r.map((x, i) => x / runs[0][i]))),
  };
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

const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const size = (dir) => {
  const wasm = readFileSync(join(dir, "wasm/stcheck_native_bg.wasm"));
  return `${wasm.length} bytes raw, ${gzipSync(wasm, { level: 9 }).length} gzipped`;
};
console.log(`stcheck_native_bg.wasm: ${size(PKG)}`);
if (BEFORE) console.log(`before (${BEFORE}): ${size(BEFORE)}`);
console.log(`node ${process.version}; load average ${loadavg().map((x) => x.toFixed(2)).join(" ")} on ${cpus().length} cores`);
console.log(`${ROUNDS} rounds per size, each the median of interleaved batches; microseconds per header;`);
console.log("ratio = checkHeader / JSON.parse (within each turn), the median round's [lowest, highest]\n");
console.log(`tensors   header bytes   JSON.parse   checkHeader   ratio${BEFORE ? "                before   ratio" : ""}   parseSafetensorsMetadata`);
const text = new TextDecoder();
for (const n of [1, 1000, 100000]) {
  const { bytes, headerLen } = file(n);
  const head = bytes.subarray(0, 8 + headerLen);
  for (const m of before ? [st, before] : [st]) {
    const r = m.checkHeader(head, bytes.length);
    if (r.status !== "valid" || r.tensors !== n) throw new Error(`the bench file of ${n} tensors is ${r.status}`);
  }
  // The floor: the header's bytes decoded to text and parsed, nothing more.
  const fs = [() => JSON.parse(text.decode(head.subarray(8))), () => st.checkHeader(head, bytes.length)];
  if (before) fs.push(() => before.checkHeader(head, bytes.length));
  const rounds = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push(timeTogether(fs, n === 100000 ? 3000 : 1000));
  const col = (k) => median(rounds.map((r) => r.ms[k]));
  const ratio = (k) => {
    const rs = rounds.map((r) => r.ratio[k]);
    return `${median(rs).toFixed(2)} [${Math.min(...rs).toFixed(2)}, ${Math.max(...rs).toFixed(2)}]`;
  };
  let theirs = "n/a";
  if (hub) {
    const fetch = localFetch(bytes);
    const args = { repo: "bench/model", path: "model.safetensors", fetch, hubUrl: "http://127.0.0.1:1" };
    const meta = await hub.parseSafetensorsMetadata(args);
    if (Object.keys(meta.header).length !== n + 1) throw new Error("the hub parser read another header");
    theirs = ((await timeAsync(() => hub.parseSafetensorsMetadata(args))) * 1000).toFixed(1);
  }
  const us = (ms) => (ms * 1000).toFixed(ms < 0.01 ? 2 : 1);
  const was = before ? `   ${us(col(2)).padStart(7)}   ${ratio(2).padStart(18)}` : "";
  console.log(
    `${String(n).padStart(7)}   ${String(headerLen).padStart(12)}   ${us(col(0)).padStart(10)}   ${us(col(1)).padStart(11)}   ${ratio(1).padStart(18)}${was}   ${theirs.padStart(24)}`,
  );
}
console.log(`load average after: ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);

// Where a 1-tensor call's time goes: the wrapper's steps, each timed alone through the glue
// the wrapper itself loaded (the same instance). The native call hands a record over without
// its decoding; what it tells the wrapper (keys) the wrapper has been told by then, since it
// checked the same header first.
{
  const native = await import(pathToFileURL(join(PKG, "wasm/stcheck_native.js")).href);
  const { bytes, headerLen } = file(1);
  const head = bytes.subarray(0, 8 + headerLen);
  const steps = {
    "JSON.parse of the header (the floor)": () => JSON.parse(text.decode(head.subarray(8))),
    "checkHeader (the whole call)": () => st.checkHeader(head, bytes.length),
    "native checkBytes (the record handed over, not decoded)": () => native.checkBytes(head, bytes.length),
    "native optionsError('{}') (a call with a string in and out)": () => native.optionsError("{}"),
  };
  const times = timeTogether(Object.values(steps)).ms;
  console.log("\n1 tensor, step by step (microseconds):");
  Object.keys(steps).forEach((k, i) => console.log(`  ${(times[i] * 1000).toFixed(2).padStart(7)}  ${k}`));
}
