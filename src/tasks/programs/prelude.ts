/**
 * Shared head of every built-in verifier program. Verifiers are plain CommonJS scripts with no dependencies (they run
 * inside the sandbox with whatever `node` is on PATH). They live in {@link VERIFIER_DIR}, read `expected.json` next to
 * themselves, inspect the workspace (= cwd) and print exactly one JSON result line last. Any exception becomes score 0
 * with an error, never a crash without output.
 */
export const VERIFIER_PRELUDE = String.raw`"use strict";
const fs = require("fs");
const path = require("path");
const WS = process.cwd();
function emit(score, subscores, error) {
  const s = typeof score === "number" && Number.isFinite(score) ? Math.max(0, Math.min(1, score)) : 0;
  const out = { score: s, subscores: subscores || {} };
  if (error) out.error = String(error);
  process.stdout.write("\n" + JSON.stringify(out) + "\n");
}
function expected() {
  return JSON.parse(fs.readFileSync(path.join(__dirname, "expected.json"), "utf8"));
}
function readText(rel) {
  try {
    const p = path.join(WS, rel);
    if (!fs.statSync(p).isFile()) return null;
    return fs.readFileSync(p, "utf8");
  } catch (e) {
    return null;
  }
}
function exists(rel) {
  try { fs.lstatSync(path.join(WS, rel)); return true; } catch (e) { return false; }
}
function isDir(rel) {
  try { return fs.statSync(path.join(WS, rel)).isDirectory(); } catch (e) { return false; }
}
// Tool logs come with the verifier (the host's record of the calls), never from the agent's workspace.
function readLog(name) {
  let text = null;
  try { text = fs.readFileSync(path.join(__dirname, "logs", name), "utf8"); } catch (e) { return []; }
  const out = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try { out.push(JSON.parse(line)); } catch (e) { /* a torn or tampered line is ignored */ }
  }
  return out;
}
function run(body) {
  try { body(); } catch (e) { emit(0, {}, "verifier failed: " + (e && e.message ? e.message : String(e))); }
}
`;
