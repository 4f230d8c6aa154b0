// Shared by the Node tests: where the package and the CLI are, the corpus, and the CLI as the
// oracle (`stcheck --json`, run once per option set over every corpus path).

import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync, existsSync, lstatSync, realpathSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const CORPUS = join(ROOT, "corpus");
export const PKG = process.env.STCHECK_JS_PKG ?? join(ROOT, "target/js-pkg");

export function cliPath() {
  if (process.env.STCHECK_BIN) return resolve(process.env.STCHECK_BIN);
  for (const p of ["target/release/stcheck", "target/debug/stcheck"]) {
    if (existsSync(join(ROOT, p))) return join(ROOT, p);
  }
  throw new Error("no stcheck binary: cargo build --release -p stcheck-cli (or set STCHECK_BIN)");
}

export const manifest = JSON.parse(readFileSync(join(CORPUS, "manifest.json"), "utf8"));
export const fileCases = manifest.cases.filter((c) => c.kind === "file");
export const indexCases = manifest.cases.filter((c) => c.kind === "index");

export function corpusBytes(path) {
  return new Uint8Array(readFileSync(join(CORPUS, path)));
}

/** `stcheck --json ARGS... PATHS...` from the corpus folder: records by path. */
export function cli(args, paths) {
  const out = spawnSync(cliPath(), ["--json", "--no-progress", ...args, ...paths], {
    cwd: CORPUS,
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  if (out.status !== 0 && out.status !== 1) {
    throw new Error(`stcheck exited ${out.status}: ${out.stderr}`);
  }
  const byPath = new Map();
  for (const line of out.stdout.split("\n")) {
    if (!line) continue;
    const r = JSON.parse(line);
    if (r.type === "file" || r.type === "index") byPath.set(r.data.path, r.data);
  }
  return byPath;
}

/** A record without what depends on how the bytes were obtained (path, mode, url, cost). */
export function comparable(record) {
  const drop = (r) => {
    const o = { ...r };
    delete o.path;
    delete o.mode;
    delete o.url;
    delete o.cost;
    if (Array.isArray(o.shards)) o.shards = o.shards.map(drop);
    // How a link is described is the reader's (the CLI names its --follow-links option).
    for (const key of ["errors", "warnings"]) {
      if (Array.isArray(o[key])) o[key] = o[key].map((f) => (f.rule === "INDEX-SHARD-LINK" ? { ...f, message: "(link)" } : f));
    }
    if (o.error?.rule === "INDEX-SHARD-LINK") o.error = { ...o.error, message: "(link)" };
    return o;
  };
  return drop(record);
}

/** The first bytes of a file a header check needs: the length field and the header (at
 * least the 512 bytes the format sniffer reads), and no data. */
export function headBytes(bytes) {
  if (bytes.length < 8) return bytes;
  const n = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  const want = n > BigInt(bytes.length) ? bytes.length : 8 + Number(n);
  return bytes.subarray(0, Math.min(bytes.length, Math.max(want, 512)));
}

/** The `*.safetensors` names beside an index. */
export function listing(indexPath) {
  const dir = join(CORPUS, dirname(indexPath));
  return readdirSync(dir).filter((n) => n.endsWith(".safetensors"));
}

/** readShard for an index of the corpus: a Blob of the shard, or null when it is not there;
 * a link that leads outside the index's folder is not followed (the CLI's default policy). */
export function shardReader(indexPath, NotCheckedError, { asBlob = true } = {}) {
  const dir = join(CORPUS, dirname(indexPath));
  return async (name) => {
    const p = join(dir, name);
    if (!existsSync(p)) return null;
    if (lstatSync(p).isSymbolicLink()) {
      const to = realpathSync(p);
      if (!to.startsWith(realpathSync(dir) + sep)) {
        throw new NotCheckedError(`a symbolic link to ${to}, outside ${dirname(indexPath)}: not followed`, "link_not_followed");
      }
    }
    const bytes = readFileSync(p);
    return asBlob ? new Blob([bytes]) : new Uint8Array(bytes);
  };
}
