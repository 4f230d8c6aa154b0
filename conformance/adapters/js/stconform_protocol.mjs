// The adapter side of the stcheck conformance protocol, v2, for Node adapters (see
// conformance/PROTOCOL.md; ../python/stconform_protocol.py is the Python twin).
//
// `nodeDirArgs(defaultDir)` takes `[--node-dir DIR] (FILE | --persistent)` from the command
// line; `serve(name, args, answer)` runs `answer(path, kind)` (it returns {status, ...members}
// with status accept, reject, unsupported, crash, or io for an error reading the file) once
// for FILE, or once per JSON request line with --persistent.
import { createInterface } from "node:readline";
import { resolve } from "node:path";

export function nodeDirArgs(name, defaultDir) {
  const args = process.argv.slice(2);
  let nodeDir = defaultDir;
  if (args[0] === "--node-dir") {
    nodeDir = resolve(args[1] ?? "");
    args.splice(0, 2);
  }
  if (args.length !== 1) {
    console.error(`usage: ${name} [--node-dir DIR] (FILE | --persistent)`);
    process.exit(2);
  }
  return { nodeDir, target: args[0] };
}

export async function serve(name, target, answer) {
  if (target === "--persistent") {
    const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
    for await (const line of lines) {
      const request = JSON.parse(line);
      const { status, ...members } = await answer(request.path, request.kind ?? "file");
      if (status === "io") {
        console.error(`${name}: ${members.message}`);
        process.exit(2);
      }
      process.stdout.write(JSON.stringify({ id: request.id, status, ...members }) + "\n");
    }
    return;
  }
  const { status, ...members } = await answer(target, process.env.STCONFORM_KIND ?? "file");
  const codes = { accept: 0, reject: 1, crash: 3, io: 2, unsupported: 4 };
  if (status !== "accept") console.error(members.message);
  if (status !== "io") process.stdout.write(JSON.stringify(members) + "\n");
  process.exitCode = codes[status];
}
