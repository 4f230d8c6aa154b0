// The package's entry for browsers and bundlers (the `browser` and `default` conditions of its
// exports): the WebAssembly is fetched from wasm/stcheck_native_bg.wasm beside this module's
// URL before the module's importers run (top-level await). A bundle made by a bundler that does
// not copy the .wasm (esbuild) needs it served at `wasm/stcheck_native_bg.wasm` beside the
// bundle (js/README.md). Node takes node.js (`import`) or node.cjs (`require`) instead.

import * as native from "./wasm/stcheck_native.js";
import bind from "./core.js";

export * from "./core.js";

const WASM_URL = new URL("./wasm/stcheck_native_bg.wasm", import.meta.url);
// The glue's address for a fresh instance (a string built at run time: bundlers leave it alone).
const GLUE = "./wasm/stcheck_native.js?instance=";

async function initialise(glue) {
  await glue.default({ module_or_path: WASM_URL });
  return glue;
}

// After a failure, a fresh instance: the glue imported again under another URL (its state is
// per module instance), initialised the same way.
bind(await initialise(native), async (n) => initialise(await import(GLUE + n)));
