#!/usr/bin/env node
// Conformance adapter: the Hugging Face Hub's JavaScript parser, `parseSafetensorsMetadata`
// from `@huggingface/hub` (see conformance/PROTOCOL.md).
//
// Usage: node hub_parse_adapter.mjs [--node-dir DIR] (FILE | --persistent)
//   DIR holds node_modules/@huggingface/hub (default: target/conformance-node, made by
//   conformance/setup-node.sh). Protocol v2: one case per process, or --persistent (one JSON
//   request line per case on stdin, one reply line on stdout).
//
// Index mode (a sharded set: STCONFORM_KIND=index or the request's "kind"): the parser is
// asked for model.safetensors.index.json; it fetches the index, then every shard it names,
// from the index's directory, and the tensors of every shard header are reported with their
// shard.
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
import { nodeDirArgs, serve } from "./stconform_protocol.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const { nodeDir, target } = nodeDirArgs("hub_parse_adapter.mjs", resolve(here, "../../../target/conformance-node"));

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
const PREFIX = `${HUB_URL}/${REPO}/resolve/main/`;
const ETAG = '"stcheck-conformance"';
const COMMIT = "0".repeat(40);
class FetchBug extends Error {}

// Serve the files of one case like the Hub's file endpoint: `files(name)` gives a file's bytes
// (or null). Ranges follow RFC 9110: a syntactically invalid range (last < first) is ignored
// (200, the whole file); a first byte past the end is 416.
function localFetch(files) {
  return async (input, init = {}) => {
    try {
      const url = input instanceof URL ? input.href : typeof input === "string" ? input : input.url;
      const method = (init.method ?? "GET").toUpperCase();
      const headers = new Headers(init.headers ?? {});
      const common = { ETag: ETAG, "X-Repo-Commit": COMMIT, "Accept-Ranges": "bytes" };
      const path = url.split("?")[0];
      const bytes = path.startsWith(PREFIX) ? files(decodeURIComponent(path.slice(PREFIX.length))) : null;
      if (bytes === null) {
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
  };
}

const text = (v) => (typeof v === "string" ? v : JSON.stringify(v));
const tensorsOf = (header, shard) =>
  Object.entries(header ?? {})
    .filter(([name]) => name !== "__metadata__")
    .map(([name, info]) => ({
      name,
      dtype: text(info?.dtype),
      shape: (info?.shape ?? []).map((d) => String(d)),
      data_offsets: (info?.data_offsets ?? []).map((d) => String(d)),
      ...(shard === undefined ? {} : { shard }),
    }));

// One case: {status, ...members} as in a persistent reply.
async function answer(file, kind) {
  const index = kind === "index";
  const dir = dirname(file);
  let files;
  if (index) {
    // Plain names in the index's directory only (the Hub serves paths inside the repository).
    files = (name) => {
      if (name.includes("/") || name.includes("\\") || name === ".." || name === ".") return null;
      try {
        return readFileSync(join(dir, name));
      } catch {
        return null;
      }
    };
  } else {
    let bytes;
    try {
      bytes = readFileSync(file);
    } catch (e) {
      return { status: "io", message: e.message };
    }
    files = (name) => (name === "model.safetensors" ? bytes : null);
  }
  let result;
  try {
    result = await hub.parseSafetensorsMetadata({
      repo: { type: "model", name: REPO },
      path: index ? "model.safetensors.index.json" : "model.safetensors",
      hubUrl: HUB_URL,
      fetch: localFetch(files),
    });
  } catch (e) {
    if (e instanceof FetchBug || e?.cause instanceof FetchBug) {
      return { status: "crash", message: e.message };
    }
    return { status: "reject", message: `${e?.name ?? "Error"}: ${e?.message ?? e}` };
  }
  if (result.sharded) {
    const tensors = Object.entries(result.headers ?? {}).flatMap(([shard, h]) => tensorsOf(h, shard));
    return { status: "accept", tensors };
  }
  const header = result.header ?? {};
  // Metadata is reported only as the protocol has it, a map of strings (the parser accepts
  // any JSON value there; deeply nested values would not even serialize).
  const meta = header.__metadata__ ?? null;
  const plain =
    meta === null ||
    (typeof meta === "object" && !Array.isArray(meta) && Object.values(meta).every((v) => typeof v === "string"));
  return { status: "accept", tensors: tensorsOf(header), ...(plain ? { metadata: meta } : {}) };
}

await serve("hub_parse_adapter", target, answer);
