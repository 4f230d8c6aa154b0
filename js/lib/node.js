// The package's entry for Node's `import` (the `node` condition): the WebAssembly is read
// from the file beside it and instantiated synchronously (wasm-bindgen's `initSync`), so this
// module has no top-level await. js/build.sh bundles it with esbuild into node.cjs, the entry
// for `require` (Node 20 cannot `require` an ES module).

import { readFileSync } from "node:fs";
import { webcrypto } from "node:crypto";
import * as native from "./wasm/stcheck_native.js";
import bind from "./core.js";

export * from "./core.js";

const WASM_URL = new URL("./wasm/stcheck_native_bg.wasm", import.meta.url);
// The glue's address for a fresh instance (a string built at run time: bundlers leave it alone).
const GLUE = "./wasm/stcheck_native.js?instance=";

function initialise(glue) {
  glue.initSync({ module: readFileSync(WASM_URL) });
  return glue;
}

// After a failure, a fresh instance: the glue imported again under another URL (its state is
// per module instance), initialised the same way.
// The module's hash seeds come from `node:crypto` (core.js, `attach`).
bind(
  initialise(native),
  async (n) => initialise(await import(GLUE + n)),
  (words) => webcrypto.getRandomValues(words),
);
