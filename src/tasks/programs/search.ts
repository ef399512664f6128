import { TOOL_LOG_DIR } from "../task.js";

/** Facts file the search tool reads, one fact per line, next to the program in the workspace. */
export const FACTS_FILE = "facts.txt";
/** How many facts one search returns at most. */
export const SEARCH_TOP_K = 3;

/**
 * `./search "<query>"`: the lookup family's tool. Ranks the facts in facts.txt by IDF-weighted overlap of lower-cased
 * word tokens with the query (ties: file order), prints the top matches, and appends `{query, results}` to
 * `.harnessrl/logs/search.jsonl`, the per-search process signal. Deterministic: same facts + query → same output.
 */
export const SEARCH_PROGRAM = String.raw`#!/usr/bin/env node
"use strict";
const fs = require("fs");
const path = require("path");
const LOG = path.join(__dirname, "${TOOL_LOG_DIR}", "search.jsonl");
const K = ${SEARCH_TOP_K};
function log(entry) {
  try {
    fs.mkdirSync(path.dirname(LOG), { recursive: true });
    fs.appendFileSync(LOG, JSON.stringify(entry) + "\n");
  } catch (e) { /* logging must never break the tool */ }
}
function tokens(s) {
  return s.toLowerCase().match(/[a-z0-9]+/g) || [];
}
const query = process.argv.slice(2).join(" ").trim();
if (!query) {
  process.stderr.write("usage: ./search \"<query>\"   e.g. ./search \"Velmora works for\"\n");
  process.exit(2);
}
const facts = fs.readFileSync(path.join(__dirname, "${FACTS_FILE}"), "utf8").split("\n").map((l) => l.trim()).filter((l) => l);
const factTokens = facts.map((f) => new Set(tokens(f)));
const df = new Map();
for (const set of factTokens) for (const t of set) df.set(t, (df.get(t) || 0) + 1);
const q = [...new Set(tokens(query))];
const scored = [];
factTokens.forEach((set, i) => {
  let s = 0;
  for (const t of q) if (set.has(t)) s += Math.log((facts.length + 1) / df.get(t));
  if (s > 0) scored.push({ i: i, s: s });
});
scored.sort((a, b) => b.s - a.s || a.i - b.i);
const results = scored.slice(0, K).map((r) => facts[r.i]);
log({ query: query, results: results });
process.stdout.write(results.length ? results.join("\n") + "\n" : "No matching facts.\n");
`;
