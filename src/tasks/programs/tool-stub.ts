/**
 * The workspace stand-in for a host tool (`metadata.hostTools`): a dependency-free CommonJS program that sends its
 * argv (and the content of any argument naming a readable file, e.g. `./search --chain question.txt`) to the host's
 * tool service over a unix socket, then prints the answer and exits with the tool's exit code. The host runs the real
 * program in a separate sandbox and keeps the record of the call; this stub logs nothing, so replacing or bypassing
 * it gains nothing.
 */

/** Bytes of one argument file sent along at most. */
export const TOOL_STUB_MAX_FILE_BYTES = 256 * 1024;

export function toolStubProgram(tool: string, socketPath: string): string {
  return String.raw`#!/usr/bin/env node
"use strict";
const fs = require("fs");
const net = require("net");
const args = process.argv.slice(2);
const files = {};
args.forEach((a, i) => {
  try {
    const st = fs.statSync(a);
    if (st.isFile() && st.size <= ${TOOL_STUB_MAX_FILE_BYTES}) files[String(i)] = fs.readFileSync(a).toString("base64");
  } catch (e) { /* not a file */ }
});
const sock = net.connect(${JSON.stringify(socketPath)});
const chunks = [];
sock.on("connect", () => sock.end(JSON.stringify({ tool: ${JSON.stringify(tool)}, args: args, files: files })));
sock.on("data", (d) => chunks.push(d));
sock.on("error", (e) => {
  process.stderr.write(${JSON.stringify(tool)} + ": tool service unavailable (" + e.message + ")\n");
  process.exit(1);
});
sock.on("end", () => {
  let r;
  try { r = JSON.parse(Buffer.concat(chunks).toString("utf8")); } catch (e) { r = { error: "bad answer from the tool service" }; }
  if (r.error) {
    process.stderr.write(${JSON.stringify(tool)} + ": " + r.error + "\n");
    process.exit(1);
  }
  process.stdout.write(r.stdout || "");
  process.stderr.write(r.stderr || "");
  process.exitCode = typeof r.code === "number" ? r.code : 1;
});
`;
}
