#!/usr/bin/env node
// Conformance adapter: the npm package `safetensors` ("safetensors for javascript"), its
// `SafeTensor` class, which parses a file's bytes in the browser or in Node (see
// conformance/PROTOCOL.md).
//
// Usage: node npm_safetensors_adapter.mjs [--node-dir DIR] (FILE | --persistent)
//   DIR holds node_modules/safetensors (default: target/conformance-node, made by
//   conformance/setup-node.sh). Protocol v2: one case per process, or --persistent.
//
// The file's bytes are read into a Uint8Array of their own (as the package's own
// `loadSafeTensor` does with a fetched ArrayBuffer) and given to `new SafeTensor(bytes)`.
// Every entry of its `metadata` map is reported as a tensor with its dtype and shape, and the
// SHA-256 of the bytes `getTensor(name)` returns. The package has no API for `__metadata__`
// (it treats it as a tensor), so no metadata is reported.
//
// Refusals (exit 1): the package has no error type and no checks of its own; the only
// refusal is `SyntaxError` from `JSON.parse` on a header that is not JSON. Anything else
// thrown (a `TypeError` on a field it assumes, a `RangeError` from a typed array) is a crash
// (exit 3): see PROTOCOL.md, "Mapping a library's errors". Sharded sets are unsupported
// (exit 4).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeDirArgs, serve } from "./stconform_protocol.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const { nodeDir, target } = nodeDirArgs("npm_safetensors_adapter.mjs", resolve(here, "../../../target/conformance-node"));

let SafeTensor;
try {
  ({ SafeTensor } = createRequire(join(nodeDir, "package.json"))("safetensors"));
} catch (e) {
  console.error(`npm_safetensors_adapter: cannot load safetensors from ${nodeDir} (run conformance/setup-node.sh): ${e.message}`);
  process.exit(2);
}

function answer(path, kind) {
  if (kind === "index") return { status: "unsupported", message: "SafeTensor reads one file" };
  let bytes;
  try {
    bytes = new Uint8Array(readFileSync(path));
  } catch (e) {
    return { status: "io", message: e.message };
  }
  try {
    const st = new SafeTensor(bytes);
    const tensors = [];
    for (const [name, info] of st.metadata) {
      const data = st.getTensor(name);
      tensors.push({
        name,
        dtype: String(info.dtype),
        shape: Array.from(info.shape ?? [], (d) => String(d)),
        sha256: createHash("sha256").update(data).digest("hex"),
      });
    }
    return { status: "accept", tensors };
  } catch (e) {
    const message = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
    return { status: e instanceof SyntaxError ? "reject" : "crash", message };
  }
}

await serve("npm_safetensors_adapter", target, answer);
