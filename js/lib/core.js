// stcheck in JavaScript: the wrapper around the WebAssembly core (wasm/stcheck_native.js,
// built by js/build.sh from js/src/lib.rs). It reads bytes (a Uint8Array, a Blob or File,
// a URL) and feeds them to the core's one checker; every record it returns is the `data` of
// the record `stcheck --json` writes, written by the same printer and parsed here.
//
// This module does not load the WebAssembly: each entry of the package does, its own way, and
// hands the loaded glue over with `bind` (the default export, which `export *` leaves out):
// stcheck.js (browsers, bundlers: `fetch`, top-level await), node.js (Node's `import`:
// synchronous, from the file) and node.cjs (Node's `require`: node.js bundled by esbuild).

const IS_NODE = typeof process !== "undefined" && !!process.versions?.node;

/** The base of every error this package throws. */
export class StcheckError extends Error {
  constructor(message) {
    super(message);
    this.name = new.target.name;
  }
}

/** Options that cannot go together, or a value that is not one (named as you write them). */
export class UsageError extends StcheckError {}

/**
 * The bytes could not be checked (a server that failed or answered something else, a short
 * read, a Blob that could not be read). Never a verdict: what could not be checked is never
 * valid. `reason` is the code the CLI's records give as `read_error` (`io`, `not_found`,
 * `changed`, ...; for a URL also `http_status`, with the status in `httpStatus`, `timeout` and
 * `tls`: docs/json-output.md).
 */
export class NotCheckedError extends StcheckError {
  constructor(message, reason = "io", cause = undefined, httpStatus = undefined) {
    super(message);
    this.reason = reason;
    if (cause !== undefined) this.cause = cause;
    if (httpStatus !== undefined) this.httpStatus = httpStatus;
  }
}

/**
 * The code of a fetch that failed, as the CLI's remote source types it: `timeout` (the
 * signal's deadline passed: `AbortSignal.timeout`), `tls` (the TLS handshake failed: an
 * untrusted certificate, a wrong host name), else `io`.
 */
function fetchFailure(e) {
  if (e?.name === "TimeoutError") return "timeout";
  const code = String(e?.cause?.code ?? e?.code ?? "");
  if (/CERT|SSL|TLS|SELF_SIGNED|HOSTNAME|ALTNAME/.test(code)) return "tls";
  return "io";
}

/**
 * A file (or set) that was checked and is invalid: the first error's rule, kind, byte offset,
 * tensor and shard, with the whole record.
 */
export class ValidationError extends StcheckError {
  constructor(record) {
    const e = firstError(record) ?? {};
    const where = e.tensor != null ? `tensor ${JSON.stringify(e.tensor)}: ` : "";
    const at = e.offset != null ? ` (at offset 0x${e.offset.toString(16)})` : "";
    super(`${record.path ?? "input"}: error ${e.rule ?? "?"}: ${where}${e.message ?? "invalid"}${at}`);
    this.rule = e.rule ?? null;
    this.kind = e.kind ?? null;
    this.offset = e.offset ?? null;
    this.tensor = e.tensor ?? null;
    this.shard = e.shard ?? null;
    this.record = record;
  }
}

function firstError(record) {
  if (record.error) return record.error;
  if (Array.isArray(record.errors) && record.errors.length) return record.errors[0];
  return null;
}

/** Throw a ValidationError for a record whose status is not `valid`; return it otherwise. */
export function assertValid(record) {
  if (record.status !== "valid") throw new ValidationError(record);
  return record;
}

// --- the module -------------------------------------------------------------------------

let loaded = false;
let generation = 0;
let api = null;
let fresh = null;
let fillRandom = null;

/**
 * Called once by the entry that loaded the module: `glue` is wasm-bindgen's glue, initialised;
 * `reloadGlue(n)` gives a fresh, initialised instance (the n-th) after a failure; `fill`, if
 * given, fills a `Uint32Array` with random words (Node's entry passes `node:crypto`'s
 * `webcrypto`, which Node 18 has without a global `crypto`).
 */
export default function bind(glue, reloadGlue, fill) {
  api = glue;
  fresh = reloadGlue;
  fillRandom = fill ?? platformRandom;
  attach();
  version = guard(() => api.version());
}

/**
 * Start on the module `api` now is: its hash seeds from the platform's randomness (the
 * module's std has none: without them anyone could work out a header of names that all
 * collide, and make its check quadratic), its memory, and no keys told yet.
 */
function attach() {
  const seed = new Uint32Array(2);
  fillRandom(seed);
  api.seedHashes(seed[0], seed[1]);
  memory = api.moduleMemory();
  words = null;
  keys = [];
  loaded = true;
}

/**
 * Fill `words` with random 32-bit words: `crypto.getRandomValues` (browsers, Node 19 and
 * later, Deno, Bun); where there is no `crypto`, `Math.random` (seeded unpredictably by the
 * engine, though not meant for secrets).
 */
function platformRandom(words) {
  if (typeof globalThis.crypto?.getRandomValues === "function") {
    globalThis.crypto.getRandomValues(words);
  } else {
    for (let i = 0; i < words.length; i++) words[i] = Math.floor(Math.random() * 2 ** 32);
  }
}

// A panic in the module aborts it (the build uses panic = "abort"): none is known, and the
// tests run every corpus file, but should one happen, the call fails as not checked and the
// next call gets a fresh instance of the module.
async function reload() {
  generation += 1;
  api = await fresh(generation);
  attach();
}

/**
 * Free a wasm object in a `finally`. After a trap the module is being reloaded and the object
 * may still be marked as borrowed by the call that trapped: its `free` then throws a plain
 * Error, which must not replace the NotCheckedError the call is failing with. The instance is
 * dropped whole by the reload.
 */
function release(obj) {
  try {
    obj?.free?.();
  } catch {
    // The old instance is dropped whole by the reload.
  }
}

function guard(f) {
  if (!loaded) throw new NotCheckedError("the stcheck module is being reloaded after a failure; try again", "io");
  try {
    return f();
  } catch (e) {
    // The native functions return envelopes and never throw; anything thrown is the module
    // failing: a trap (out of memory, an abort), or wasm-bindgen's glue finding its state
    // broken by one ("attempted to take ownership of Rust value while it was borrowed"), or a
    // string past what JavaScript holds. The instance is dropped and the call not checked.
    if (e instanceof StcheckError) throw e;
    loaded = false;
    reload().catch(() => {});
    throw new NotCheckedError(`the stcheck module failed (${e?.message ?? e}); it is reloaded`, "io", e);
  }
}

// --- what the module hands over ----------------------------------------------------------
//
// A file's check hands its envelope over in a compact encoding (js/src/compact.rs, which
// documents it), read here straight out of the module's memory and built into the value
// JSON.parse would make of its JSON text, without that text: for a small header, writing and
// parsing the record's JSON was most of the call.

const NULL = 0, FALSE = 1, TRUE = 2, UINT = 3, F64 = 4, STR = 5, ARRAY = 6, OBJECT = 7, KEY = 8, NEW_KEY = 9;

let memory = null;
/** Views of the module's memory (made again when it grows). */
let words = null;
let bytes = null;
/** The keys the module has told, by index (per module instance). */
let keys = [];
const utf8 = new TextDecoder();
const double = new Float64Array(1);
const doubleWords = new Uint32Array(double.buffer);
// The decoder's place: the word it reads next, and the text its strings are in.
let at = 0;
let text = "";

/** The envelope handed over at the address `desc` (its descriptor). */
function decode(desc) {
  if (!desc) throw new Error("the module handed nothing over");
  // A view of memory that grew since is detached: empty.
  if (words === null || words.length === 0) {
    words = new Uint32Array(memory.buffer);
    bytes = new Uint8Array(memory.buffer);
  }
  const d = desc >>> 2;
  const textAt = words[d + 2];
  const textLen = words[d + 3];
  // A common record's strings are all told ones: no text.
  text = textLen === 0 ? "" : utf8.decode(bytes.subarray(textAt, textAt + textLen));
  at = words[d] >>> 2;
  const end = at + words[d + 1];
  const v = value();
  text = "";
  if (at !== end) throw new Error("the module handed over a value it did not end");
  return v;
}

function slice() {
  const from = words[at];
  const to = from + words[at + 1];
  at += 2;
  return text.slice(from, to);
}

function key() {
  const t = words[at++];
  if (t === KEY) {
    const k = keys[words[at++]];
    if (k === undefined) throw new Error("the module named a key it had not told");
    return k;
  }
  if (t === NEW_KEY) {
    const i = words[at++];
    const k = slice();
    keys[i] = k;
    return k;
  }
  if (t === STR) return slice();
  throw new Error(`the module handed over a key tagged ${t}`);
}

function value() {
  switch (words[at++]) {
    case NULL: return null;
    case FALSE: return false;
    case TRUE: return true;
    case UINT: return words[at++];
    case F64:
      doubleWords[0] = words[at];
      doubleWords[1] = words[at + 1];
      at += 2;
      return double[0];
    case STR: return slice();
    // A short string, told as keys are.
    case KEY:
    case NEW_KEY:
      at -= 1;
      return key();
    case ARRAY: {
      const n = words[at++];
      const a = [];
      for (let i = 0; i < n; i++) a.push(value());
      return a;
    }
    case OBJECT: {
      const n = words[at++];
      const o = {};
      for (let i = 0; i < n; i++) {
        const k = key();
        const v = value();
        // A key "__proto__" (a tensor's or the metadata's) is an own property, as JSON.parse
        // makes it, never the object's prototype.
        if (k === "__proto__") Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
        else o[k] = v;
      }
      return o;
    }
    default:
      throw new Error(`the module handed over a value tagged ${words[at - 1]}`);
  }
}

/** The envelope of a file's check, `f` the native call that hands it over. */
function handed(f) {
  return guard(() => decode(f()));
}

// --- options and envelopes --------------------------------------------------------------

/** Options of this wrapper alone; every other option is the core's, checked there. */
const WRAPPER_OPTIONS = ["onProgress", "fetch", "headers", "chunkSize", "firstFetch", "path", "listing", "throwOnInvalid", "signal"];

/** The core's options as JSON text, not yet checked. */
function optionsJson(options = {}) {
  if (options === null || typeof options !== "object") throw new UsageError("options: not an object");
  const names = Object.keys(options);
  // No options (the usual call): no copy, no JSON written.
  if (names.length === 0) return "{}";
  const rest = {};
  for (const k of names) {
    const v = options[k];
    if (!WRAPPER_OPTIONS.includes(k) && v !== undefined) rest[k] = v;
  }
  return JSON.stringify(rest);
}

/** Throw the UsageError of the core's options (JSON text), if they have one. */
function checkOptions(json) {
  const err = guard(() => api.optionsError(json));
  if (err) throw new UsageError(err);
}

function nativeOptions(options = {}) {
  const json = optionsJson(options);
  checkOptions(json);
  return json;
}

/** The record of an envelope (a decoded value, or a set's JSON text, parsed). */
function open(envelope, options) {
  const e = typeof envelope === "string" ? JSON.parse(envelope) : envelope;
  if (e.usage !== undefined) throw new UsageError(e.usage);
  if (e.unread !== undefined) throw new NotCheckedError(e.unread.message, e.unread.reason);
  // `{"record": ...}`, or a line of the JSON Lines printer (`{"type", "data"}`: a set's).
  const record = e.record ?? e.data;
  if (options?.throwOnInvalid) assertValid(record);
  return record;
}

function asBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new UsageError("bytes: not a Uint8Array, ArrayBuffer or typed array");
}

function lengthOption(n, what) {
  if (n === undefined || n === null) return -1;
  if (typeof n === "bigint") n = Number(n);
  if (!Number.isSafeInteger(n) || n < 0) throw new UsageError(`${what}: not a length in bytes`);
  return n;
}

// --- the checks -------------------------------------------------------------------------

/**
 * Check a file's first bytes: the length field and the header at least. With `fileLength`,
 * the data region's length is decided from it (DATA-TRUNCATED, DATA-TRAILING) without the
 * data; without it, `bytes` are the whole file. Returns the record of `stcheck --json`.
 */
export function checkHeader(bytes, fileLength, options = {}) {
  if (fileLength !== null && typeof fileLength === "object" && !ArrayBuffer.isView(fileLength)) {
    options = fileLength;
    fileLength = undefined;
  }
  // One call into the module: checkBytes answers options that do not resolve with a usage
  // envelope; they are asked for first only when the arguments are wrong too, so that the
  // options' error is the one thrown, as for the other checks.
  const json = optionsJson(options);
  let b;
  let len;
  try {
    b = asBytes(bytes);
    len = lengthOption(fileLength, "fileLength");
  } catch (e) {
    checkOptions(json);
    throw e;
  }
  // No path and no options (the usual call): no string passed in (shown as "-", the defaults).
  const path = options.path ?? undefined;
  const given = json === "{}" ? undefined : json;
  return open(handed(() => api.checkBytes(b, len, path, given)), options);
}

/** A source of bytes at positions: a Blob (File), bytes in memory, or `{size, read(pos, n)}`
 * (read resolving to a Uint8Array: a shard behind range requests, a file handle). */
function sourceOf(input) {
  if (input && typeof input.read === "function" && Number.isSafeInteger(input.size) && input.size >= 0) {
    return {
      size: input.size,
      name: typeof input.name === "string" ? input.name : undefined,
      async read(pos, n) {
        return asBytes(await input.read(pos, n));
      },
    };
  }
  if (typeof Blob !== "undefined" && input instanceof Blob) {
    return {
      size: input.size,
      name: typeof input.name === "string" ? input.name : undefined,
      async read(pos, n) {
        return new Uint8Array(await input.slice(pos, pos + n).arrayBuffer());
      },
    };
  }
  const b = asBytes(input);
  return { size: b.length, name: undefined, async read(pos, n) { return b.subarray(pos, pos + n); } };
}

const DEFAULT_CHUNK = 8 * 1024 * 1024;

/** Feed `stream` from `source` as far as it wants; the data in chunks, with progress. */
async function pump(stream, source, options) {
  const chunk = options.chunkSize ?? DEFAULT_CHUNK;
  if (!Number.isSafeInteger(chunk) || chunk < 1) throw new UsageError("chunkSize: not a positive integer");
  let pos = 0;
  for (;;) {
    const want = guard(() => stream.wanted());
    if (want <= 0) break;
    const n = Math.min(want, chunk);
    let bytes;
    try {
      bytes = await source.read(pos, n);
    } catch (e) {
      throw new NotCheckedError(`reading bytes ${pos}-${pos + n - 1}: ${e?.message ?? e}`, "io", e);
    }
    if (bytes.length === 0) throw new NotCheckedError(`the input ended at byte ${pos} of the ${source.size} it announced`, "changed");
    pos += bytes.length;
    const more = guard(() => stream.feed(bytes));
    options.onProgress?.({ bytes: pos, total: source.size });
    if (!more) break;
  }
}

/**
 * Check a Blob or File (or bytes in memory): only the length field and the header are read
 * (two `Blob.slice` reads) unless `deep` or `sha256` is asked; then the data is streamed in
 * chunks through the same checker, with `onProgress({bytes, total})`.
 */
export async function checkBlob(blob, options = {}) {
  const json = nativeOptions(options);
  const source = sourceOf(blob);
  const stream = guard(() => api.openStream(json, source.size));
  if (!stream) throw new UsageError("the Blob's size is not a length");
  try {
    await pump(stream, source, options);
    const path = options.path ?? source.name ?? "-";
    return open(handed(() => stream.finish(path)), options);
  } finally {
    release(stream);
  }
}

// --- URLs ---------------------------------------------------------------------------------

/** The CLI's default `--timeout`: 120 s for the header, 3600 s when the data is read. */
const DEFAULT_DEADLINE_S = 120;
const DEFAULT_DATA_DEADLINE_S = 3600;

/**
 * The signal of a URL's check: `options.signal` when given (the caller's own deadline, or a
 * signal that never aborts for none); else, in Node, the CLI's default deadline for the whole
 * check (every request and body), after which the check fails as not checked, reason
 * `timeout`. A browser's fetch is left without one, as the page decides.
 */
function deadline(options) {
  if (options.signal !== undefined || !IS_NODE) return { signal: options.signal, clearDeadline() {} };
  const data = Boolean(options.deep || options.sha256 || options.expectSha256 || options.denyNonfinite);
  const seconds = data ? DEFAULT_DATA_DEADLINE_S : DEFAULT_DEADLINE_S;
  const controller = new AbortController();
  const timer = setTimeout(() => {
    controller.abort(new DOMException(`the default deadline of ${seconds} s passed (pass a signal to choose another)`, "TimeoutError"));
  }, seconds * 1000);
  timer?.unref?.();
  return { signal: controller.signal, clearDeadline: () => clearTimeout(timer) };
}

const FIRST_FETCH = 64 * 1024;
const MAX_RANGE_REQUESTS = 8;
/** The most redirects one request follows (in Node, where the wrapper follows them). */
const MAX_REDIRECTS = 10;

function parseContentRange(v) {
  const m = /^\s*bytes\s+(?:(\d+)-(\d+)|\*)\/(\d+|\*)\s*$/i.exec(v ?? "");
  if (!m) return null;
  const num = (s) => (s === undefined || s === "*" ? null : Number(s));
  const start = num(m[1]);
  const end = num(m[2]);
  const total = num(m[3]);
  if (start !== null && (end < start || (total !== null && end >= total))) return null;
  if (start === null && total === null) return null;
  for (const x of [start, end, total]) if (x !== null && !Number.isSafeInteger(x)) return null;
  return { start, end, total };
}

/**
 * Feed `stream` from a response body: skip its first `skip` bytes (a server that ignores
 * Range sends the file from its start), then feed until the checker has what it needs, the
 * body has `limit` bytes, or it ends. Returns the bytes fed; the body is then dropped.
 */
async function feedBody(resp, stream, { skip, limit, count, progress, scrub }) {
  if (!resp.body) throw new NotCheckedError("the response has no body");
  const reader = resp.body.getReader();
  let pos = 0;
  let fed = 0;
  // The checker said it has what it needs.
  let satisfied = false;
  try {
    while (pos < skip + limit) {
      let step;
      try {
        step = await reader.read();
      } catch (e) {
        throw new NotCheckedError(scrub(`reading the response failed after ${pos} bytes: ${e?.cause?.message ?? e?.message ?? e}`), fetchFailure(e));
      }
      const { done, value } = step;
      if (done) break;
      count(value.length);
      const from = Math.max(0, skip - pos);
      const to = Math.min(value.length, skip + limit - pos);
      pos += value.length;
      if (from >= to) continue;
      const piece = value.subarray(from, to);
      fed += piece.length;
      const more = guard(() => stream.feed(piece));
      progress(piece.length);
      // The checker has what it needs: the rest of the announced body is dropped unread.
      if (!more) {
        if (pos < skip + limit) return { fed, ended: false, more: false, extra: false };
        satisfied = true;
        break;
      }
    }
    if (pos < skip + limit) return { fed, ended: true, more: true, extra: false };
    // As long as announced: one more read tells whether the body goes on (a body longer than
    // its Content-Range or Content-Length is not the file's bytes).
    let extra = pos > skip + limit;
    if (!extra) {
      try {
        const step = await reader.read();
        extra = !step.done && step.value.length > 0;
      } catch (e) {
        throw new NotCheckedError(scrub(`reading the response failed after ${pos} bytes: ${e?.cause?.message ?? e?.message ?? e}`), fetchFailure(e));
      }
    }
    return { fed, ended: false, more: !satisfied, extra };
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/**
 * Check a file on an HTTP(S) server with range requests, as `stcheck URL` does: a first
 * request for 64 KiB (and the file's length, from Content-Range), a second for the rest of
 * the header only if it is longer; the data only with `deep`/`sha256`, streamed. A server
 * that ignores Range is read from its body as far as the check needs, then dropped. A server
 * that fails, or answers something other than the file, throws NotCheckedError.
 */
export async function checkUrl(url, options = {}) {
  const json = nativeOptions(options);
  const doFetch = options.fetch ?? globalThis.fetch;
  if (typeof doFetch !== "function") throw new UsageError("fetch: no fetch function");
  const first = options.firstFetch ?? FIRST_FETCH;
  const href = String(url);
  // What messages and the record show: never the address's user information, query or
  // fragment (they may be credentials).
  const shown = guard(() => api.shownUrl(href));
  let requests = 0;
  let bodyBytes = 0;
  let total = null;
  let stream = null;
  let have = 0;
  const count = (n) => { bodyBytes += n; };
  const report = (n) => {
    have += n;
    options.onProgress?.({ bytes: have, total });
  };
  const scrub = (m) => guard(() => api.scrubUrlIn(String(m), href));
  const fail = (m, reason = "io") => { throw new NotCheckedError(scrub(`${shown}: ${m}`), reason); };
  const failStatus = (status, m) => {
    throw new NotCheckedError(scrub(`${shown}: ${m}`), "http_status", undefined, status);
  };
  let redirects = 0;
  // The X-Linked-Etag a response of the URL's own origin gave (the hub's LFS SHA-256): a
  // published id, compared with the file's SHA-256 as the CLI compares it.
  let linkedEtag;
  let home;
  try {
    home = new URL(href).origin;
  } catch {
    fail("not a URL");
  }
  // In Node the wrapper follows redirects itself, as the CLI does, so that `options.headers`
  // (credentials, often) go only to the URL's own origin; fetch would send every header but
  // Authorization on to a redirect's origin (a CDN, another host). A browser does not show
  // redirects to a page (an opaque response): there the browser follows them.
  const manual = IS_NODE;
  const get = async (range) => {
    let target = href;
    for (let hop = 0; ; hop += 1) {
      requests += 1;
      const own = new URL(target).origin === home;
      const headers = new Headers(own ? (options.headers ?? {}) : {});
      if (range) headers.set("Range", `bytes=${range[0]}-${range[1]}`);
      headers.set("Accept-Encoding", "identity");
      let resp;
      try {
        resp = await doFetch(target, { headers, signal, redirect: manual ? "manual" : "follow" });
      } catch (e) {
        fail(`the request failed: ${e?.cause?.message ?? e?.message ?? e}`, fetchFailure(e));
      }
      if (own && resp.headers.has("x-linked-etag")) linkedEtag = resp.headers.get("x-linked-etag");
      if (!manual || ![301, 302, 303, 307, 308].includes(resp.status)) {
        if (resp.type === "opaqueredirect") fail("the fetch given hides redirects (an opaque redirect response)");
        return resp;
      }
      await resp.body?.cancel().catch(() => {});
      const location = resp.headers.get("location");
      if (!location) fail(`HTTP ${resp.status} without a Location header`);
      if (hop >= MAX_REDIRECTS) fail(`more than ${MAX_REDIRECTS} redirects`);
      let next;
      try {
        next = new URL(location, target);
      } catch {
        fail(`HTTP ${resp.status} to an address that is not a URL`);
      }
      if (next.protocol !== "http:" && next.protocol !== "https:") fail(`a redirect to a ${next.protocol} address`);
      target = next.href;
      redirects += 1;
    }
  };
  const { signal, clearDeadline } = deadline(options);
  try {
    let rangeRequests = 0;
    for (;;) {
      if (stream !== null) {
        const want = guard(() => stream.wanted());
        if (want <= 0) break;
      }
      if (rangeRequests >= MAX_RANGE_REQUESTS) fail(`the server's ranges are too short: ${have} bytes after ${MAX_RANGE_REQUESTS} range requests`);
      rangeRequests += 1;
      const want = stream === null ? first : Math.max(1, guard(() => stream.wanted()));
      // One request for what the checker wants (the rest of the header, or of the file for
      // a deep check); its body is streamed into the checker as it arrives.
      let end = have + want - 1;
      if (total !== null) end = Math.min(end, total - 1);
      const resp = await get([have, end]);
      const enc = resp.headers.get("content-encoding");
      if (enc && enc.trim().toLowerCase() !== "identity") fail(`the server sent the body with Content-Encoding ${enc}`);
      if (resp.status === 206) {
        const cr = parseContentRange(resp.headers.get("content-range"));
        if (!cr || cr.start === null) fail("a 206 response without a valid Content-Range");
        if (cr.start !== have) fail("the server sent a range we did not ask for");
        if (cr.total === null) fail("the server did not say how long the file is");
        if (total !== null && cr.total !== total) fail(`the file changed: its length was ${total} bytes, now ${cr.total}`, "changed");
        total = cr.total;
        const span = cr.end - cr.start + 1;
        if (stream === null) {
          stream = guard(() => api.openStream(json, total));
          if (!stream) fail("the file's length is not usable");
        }
        const r = await feedBody(resp, stream, { skip: 0, limit: span, count, progress: report, scrub });
        if (r.more && r.ended) fail(`the body ended after ${r.fed} bytes, shorter than the ${span} announced`);
        if (r.extra) fail(`the body is longer than the ${span} bytes of its Content-Range (bytes ${cr.start}-${cr.end}/${cr.total})`);
        if (!r.more) break;
        if (have >= total) break;
        continue;
      }
      if (resp.status === 416) {
        const cr = parseContentRange(resp.headers.get("content-range"));
        if (cr && cr.total === 0 && have === 0) {
          total = 0;
          stream = guard(() => api.openStream(json, 0));
          break;
        }
        failStatus(416, `HTTP 416 Range Not Satisfiable for bytes ${have}-${end}`);
      }
      if (resp.status === 200) {
        // No Range support: the body is the whole file; read it as far as the check needs.
        const cl = resp.headers.get("content-length");
        const announced = cl !== null && /^\s*\d+\s*$/.test(cl) ? Number(cl) : null;
        if (announced === null || !Number.isSafeInteger(announced)) fail("the server did not say how long the file is (no Range support, no Content-Length)");
        if (total !== null && announced !== total) fail(`the file changed: its length was ${total} bytes, now ${announced}`, "changed");
        total = announced;
        if (stream === null) stream = guard(() => api.openStream(json, total));
        const r = await feedBody(resp, stream, { skip: have, limit: total - have, count, progress: report, scrub });
        if (r.more && r.ended) fail(`the body ended after ${have} bytes, shorter than the ${total} announced`);
        if (r.extra) fail(`the body is longer than the ${total} bytes announced`);
        break;
      }
      failStatus(resp.status, `unexpected HTTP ${resp.status} to a range request`);
    }
    const path = options.path ?? shown;
    return open(handed(() => stream.finishRemote(path, shown, requests, bodyBytes, redirects, linkedEtag)), options);
  } finally {
    clearDeadline();
    release(stream);
  }
}

// --- sharded sets -------------------------------------------------------------------------

/**
 * Check a sharded checkpoint: the index's bytes, and its shards through `readShard(name)`,
 * which returns (or resolves to) a Blob, File, Uint8Array, ArrayBuffer or `{size, read(pos, n)}`
 * (for shards read by range, as on a server), or null/undefined
 * for a shard that is not there (INDEX-SHARD-MISSING). A readShard that throws makes the set
 * not checked, unless it throws a NotCheckedError whose reason is `not_found` or
 * `not_regular` (INDEX-SHARD-MISSING) or `link_not_followed` (INDEX-SHARD-LINK). `options.listing`: the `*.safetensors` names in the index's directory, for
 * INDEX-SHARD-UNLISTED. Returns the index record of `stcheck --json`.
 */
export async function checkIndex(indexBytes, readShard, options = {}) {
  const json = nativeOptions(options);
  // `expectSha256` gives the hash of one file, not of a set.
  const setError = guard(() => api.indexOptionsError(json));
  if (setError) throw new UsageError(setError);
  if (typeof readShard !== "function") throw new UsageError("readShard: not a function");
  const session = guard(() => api.openIndex(asBytes(indexBytes), json));
  if (!session) throw new UsageError("options do not resolve");
  try {
    if (options.listing !== undefined) {
      if (!Array.isArray(options.listing) || !guard(() => session.setListing(JSON.stringify(options.listing)))) {
        throw new UsageError("listing: not an array of file names");
      }
    }
    const names = JSON.parse(guard(() => session.shardNames()));
    // An index naming more shards than the module checks in one set: `{"unread": ...}`.
    if (!Array.isArray(names)) throw new NotCheckedError(names.unread?.message ?? "the index's shards could not be listed", names.unread?.reason ?? "io");
    for (const name of names) {
      let got;
      try {
        got = await readShard(name);
      } catch (e) {
        const reason = e instanceof NotCheckedError ? e.reason : "io";
        guard(() => session.shardUnreadable(name, reason, e instanceof NotCheckedError ? e.message : `${name}: ${e?.message ?? e}`));
        continue;
      }
      if (got === null || got === undefined) continue;
      const source = sourceOf(got);
      const stream = guard(() => session.openShard(source.size));
      try {
        const progress = options.onProgress;
        await pump(stream, source, { ...options, onProgress: progress && ((p) => progress({ ...p, shard: name })) });
        guard(() => session.addShard(name, stream));
      } catch (e) {
        if (!(e instanceof NotCheckedError)) throw e;
        guard(() => session.shardUnreadable(name, e.reason, e.message));
      } finally {
        release(stream);
      }
    }
    const path = options.path ?? "model.safetensors.index.json";
    const slash = path.lastIndexOf("/");
    const dir = slash >= 0 ? path.slice(0, slash + 1) : "";
    return open(guard(() => session.finish(path, dir)), options);
  } finally {
    release(session);
  }
}

// --- rule texts ---------------------------------------------------------------------------

/** The text of a rule in SPEC.md (`{rule, severity, kind, summary, statement, rationale, section}`), or null. */
export function explain(rule) {
  return JSON.parse(guard(() => api.explain(String(rule))));
}

/** Every rule ID of SPEC.md. */
export function rules() {
  return JSON.parse(guard(() => api.rules()));
}

/** The package's version (set when an entry binds the module). */
export let version = "";
