// The demo page in a real browser: Debian's headless Chromium (js/test/chromium.mjs). A
// loopback server (127.0.0.1) serves target/js-pkg; the test sets a valid and an invalid
// corpus file in the page's file input and asserts the verdicts shown, and saves a screenshot
// of each state: target/js-demo-valid.png, target/js-demo-invalid.png.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

import { PKG, ROOT, CORPUS, cli } from "./helpers.mjs";
import { launch, serve } from "./chromium.mjs";

let server;
let chromium;
let page;
let evaluate;
let waitFor;

before(async () => {
  server = await serve(PKG);
  chromium = await launch();
  ({ page, evaluate, waitFor } = chromium);
});

after(async () => {
  try {
    await chromium?.close();
  } finally {
    await server?.close();
  }
});

async function choose(path) {
  const { result } = await page.send("Runtime.evaluate", { expression: "document.getElementById('file')" });
  await page.send("DOM.setFileInputFiles", { files: [path], objectId: result.objectId });
}

async function screenshot(name) {
  const { data } = await page.send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true });
  const out = join(ROOT, "target", name);
  await writeFile(out, Buffer.from(data, "base64"));
  return out;
}

test("the demo page checks a valid and an invalid file in the browser", { timeout: 90_000 }, async () => {
  await page.send("Page.navigate", { url: `${server.base}/demo/` });
  await waitFor("document.body && document.body.dataset.ready === 'yes'");
  assert.match(await evaluate("document.getElementById('version').textContent"), /^stcheck \d+\.\d+\.\d+/);

  // The CLI is the oracle of what the page shows.
  const validPath = "valid/layout/mixed-aligned.safetensors";
  const invalidPath = "malformed/json/single-quotes.safetensors";
  const oracle = cli(["-v"], [validPath, invalidPath]);
  const want = oracle.get(validPath);
  const fmt = new Intl.NumberFormat("en");
  await choose(join(CORPUS, validPath));
  await waitFor("document.getElementById('verdict').dataset.status === 'valid'");
  const valid = await evaluate("document.getElementById('verdict').textContent");
  assert.ok(valid.startsWith(`mixed-aligned.safetensors: valid, ${fmt.format(want.tensors)} tensors, ${fmt.format(want.parameters)} parameters (`), valid);
  assert.equal(await evaluate("document.querySelectorAll('#tensors tbody tr').length"), want.tensor_list.length);
  const validShot = await screenshot("js-demo-valid.png");

  await choose(join(CORPUS, invalidPath));
  await waitFor("document.getElementById('verdict').dataset.status === 'invalid'");
  const invalid = await evaluate("document.getElementById('verdict').textContent");
  const rule = oracle.get(invalidPath).error.rule;
  assert.equal(invalid, `single-quotes.safetensors: invalid, ${rule}`);
  assert.match(await evaluate("document.querySelector('.rule details pre').textContent"), new RegExp(`^### ${rule}\\b`));
  const invalidShot = await screenshot("js-demo-invalid.png");

  // A deep check: the progress bar, then the hash.
  await evaluate("document.getElementById('deep').checked = true");
  await choose(join(ROOT, "examples/model.safetensors"));
  await waitFor("document.getElementById('sha256')");
  assert.match(await evaluate("document.getElementById('sha256').textContent"), /^[0-9a-f]{64}$/);
  console.log(`screenshots: ${validShot}, ${invalidShot}`);
});
