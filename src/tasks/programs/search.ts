import { TOOL_LOG_DIR } from "../task.js";

/** Facts file the search tool reads, one fact per line, next to the program in the workspace. */
export const FACTS_FILE = "facts.txt";
/** How many facts one search returns at most. */
export const SEARCH_TOP_K = 3;

/**
 * `./search "<query>"`: the lookup family's tool. Ranks the facts in facts.txt by IDF-weighted overlap of lower-cased
 * word tokens with the query (ties: file order), prints the top matches, and appends `{query, results}` to
 * `.harnessrl/logs/search.jsonl`, the per-search process signal. Deterministic: same facts + query → same output.
 * `./search --chain FILE` (the `lookuprun` rung) runs one search per hop listed in FILE and prints the last answer.
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
const facts = fs.readFileSync(path.join(__dirname, "${FACTS_FILE}"), "utf8").split("\n").map((l) => l.trim()).filter((l) => l);
const factTokens = facts.map((f) => new Set(tokens(f)));
const df = new Map();
for (const set of factTokens) for (const t of set) df.set(t, (df.get(t) || 0) + 1);
function search(query) {
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
  return results;
}
// --chain FILE: line 1 is a query, each further line a relation ("headquartered"); every hop searches
// "<previous answer> <relation>" and takes the last word of the top fact as its answer; prints the final answer.
if (process.argv[2] === "--chain") {
  let lines = [];
  try {
    lines = fs.readFileSync(process.argv[3] || "", "utf8").split("\n").map((l) => l.trim()).filter((l) => l);
  } catch (e) {
    process.stderr.write("search --chain: cannot read " + (process.argv[3] || "(no file given)") + "\n");
    process.exit(2);
  }
  let answer = "";
  for (let h = 0; h < lines.length; h++) {
    const top = search(h === 0 ? lines[h] : answer + " " + lines[h])[0];
    if (!top) {
      process.stdout.write("No matching facts.\n");
      process.exit(1);
    }
    answer = (top.match(/([A-Za-z0-9]+)\W*$/) || ["", ""])[1];
  }
  process.stdout.write(answer + "\n");
  process.exit(0);
}
const query = process.argv.slice(2).join(" ").trim();
if (!query) {
  process.stderr.write("usage: ./search \"<query>\"   e.g. ./search \"Velmora works for\"   or: ./search --chain FILE\n");
  process.exit(2);
}
const results = search(query);
process.stdout.write(results.length ? results.join("\n") + "\n" : "No matching facts.\n");
`;
