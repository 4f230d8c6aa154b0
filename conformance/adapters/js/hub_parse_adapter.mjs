#!/usr/bin/env node
// Conformance adapter: the Hugging Face Hub's JavaScript parser, `parseSafetensorsMetadata`
// from `@huggingface/hub` (see conformance/PROTOCOL.md).
//
// Usage: node hub_parse_adapter.mjs [--node-dir DIR] FILE
//   DIR holds node_modules/@huggingface/hub (default: target/conformance-node, made by
//   conformance/setup-node.sh).
//
// The parser fetches files over HTTP; here every request goes to a local `fetch` function that
// serves FILE's bytes the way the Hub does: ranged GET answered 206 with Content-Range, ETag
// and X-Repo-Commit; HEAD with Content-Length. Nothing touches the network.
//
// The parser reads the header only: tensors are reported with dtype, shape and data_offsets as
// it parsed them (numbers printed with JavaScript's String(), so a value above 2^53 shows its
// lost precision), no bytes, and the metadata.
//
// Exit codes: 0 accepted (JSON on stdout), 1 the parser threw (rejected), 2 usage or I/O
// error, 3 the adapter's own fetch failed (a bug here, not a verdict).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
let nodeDir = resolve(here, "../../../target/conformance-node");
if (args[0] === "--node-dir") {
  nodeDir = resolve(args[1] ?? "");
  args.splice(0, 2);
}
if (args.length !== 1) {
  console.error("usage: hub_parse_adapter.mjs [--node-dir DIR] FILE");
  process.exit(2);
}

let bytes;
try {
  bytes = readFileSync(args[0]);
} catch (e) {
  console.error(`hub_parse_adapter: ${e.message}`);
  process.exit(2);
}

let hub;
try {
  const require = createRequire(join(nodeDir, "package.json"));
  const entry = require.resolve("@huggingface/hub").replace(/index\.js$/, "index.mjs");
  hub = await import(pathToFileURL(entry).href);
} catch (e) {
  console.error(`hub_parse_adapter: cannot load @huggingface/hub from ${nodeDir} (run conformance/setup-node.sh): ${e.message}`);
  process.exit(2);
}

const HUB_URL = "http://hub.conformance.invalid";
const REPO = "conformance/local";
const FILE_URL = `${HUB_URL}/${REPO}/resolve/main/model.safetensors`;
const ETAG = '"stcheck-conformance"';
const COMMIT = "0".repeat(40);
class FetchBug extends Error {}

// Serve `bytes` like the Hub's file endpoint. Ranges follow RFC 9110: a syntactically invalid
// range (last < first) is ignored (200, the whole file); a first byte past the end is 416.
async function localFetch(input, init = {}) {
  try {
    const url = input instanceof URL ? input.href : typeof input === "string" ? input : input.url;
    const method = (init.method ?? "GET").toUpperCase();
    const headers = new Headers(init.headers ?? {});
    const common = { ETag: ETAG, "X-Repo-Commit": COMMIT, "Accept-Ranges": "bytes" };
    if (url.split("?")[0] !== FILE_URL) {
      return new Response("not found", { status: 404, headers: { "X-Error-Code": "EntryNotFound" } });
    }
    const size = bytes.length;
    if (method === "HEAD") {
      return new Response(null, { status: 200, headers: { ...common, "Content-Length": String(size) } });
    }
    const range = headers.get("Range");
    const m = range && /^bytes=(\d+)-(\d*)$/.exec(range.trim());
    if (m) {
      const first = Number(m[1]);
      const last = m[2] === "" ? size - 1 : Number(m[2]);
      if (last >= first) {
        if (first >= size) {
          return new Response(null, { status: 416, headers: { ...common, "Content-Range": `bytes */${size}` } });
        }
        const end = Math.min(last, size - 1);
        const body = bytes.subarray(first, end + 1);
        return new Response(body, {
          status: 206,
          headers: { ...common, "Content-Range": `bytes ${first}-${end}/${size}`, "Content-Length": String(body.length) },
        });
      }
    }
    return new Response(bytes, { status: 200, headers: { ...common, "Content-Length": String(size) } });
  } catch (e) {
    throw new FetchBug(`local fetch failed: ${e.message}`);
  }
}

const text = (v) => (typeof v === "string" ? v : JSON.stringify(v));
let result;
try {
  result = await hub.parseSafetensorsMetadata({
    repo: { type: "model", name: REPO },
    path: "model.safetensors",
    hubUrl: HUB_URL,
    fetch: localFetch,
  });
} catch (e) {
  if (e instanceof FetchBug || e?.cause instanceof FetchBug) {
    console.error(`crash: ${e.message}`);
    process.exit(3);
  }
  console.error(`${e?.name ?? "Error"}: ${e?.message ?? e}`);
  process.exit(1);
}

const header = result.header ?? {};
const tensors = Object.entries(header)
  .filter(([name]) => name !== "__metadata__")
  .map(([name, info]) => ({
    name,
    dtype: text(info?.dtype),
    shape: (info?.shape ?? []).map((d) => String(d)),
    data_offsets: (info?.data_offsets ?? []).map((d) => String(d)),
  }));
const metadata = header.__metadata__ ?? null;
process.stdout.write(JSON.stringify({ tensors, metadata }) + "\n");
