import { VERIFIER_DIR, type VerifierSpec } from "../task.js";
import { VERIFIER_PRELUDE } from "./prelude.js";

/**
 * The built-in families' verifier programs (CommonJS, no dependencies). Each reads `expected.json` next to itself.
 */

/** SQuAD-style answer normalisation and token F1, shared by every verifier that scores free-text answers. */
const F1_CODE = String.raw`
function normTokens(s) {
  return String(s).toLowerCase().replace(/[^a-z0-9\s]/g, " ").split(/\s+/).filter((t) => t && t !== "a" && t !== "an" && t !== "the");
}
function tokenF1(pred, gold) {
  const p = normTokens(pred);
  const g = normTokens(gold);
  if (p.length === 0 || g.length === 0) return p.length === g.length ? 1 : 0;
  const counts = new Map();
  for (const t of g) counts.set(t, (counts.get(t) || 0) + 1);
  let same = 0;
  for (const t of p) {
    const c = counts.get(t) || 0;
    if (c > 0) { same++; counts.set(t, c - 1); }
  }
  if (same === 0) return 0;
  const precision = same / p.length;
  const recall = same / g.length;
  return (2 * precision * recall) / (precision + recall);
}
`;

/**
 * arith: exact match of answer.txt (trimmed) against the gold number. Sub-scores: `exact`; `calc_used` (some call
 * returned the gold value); `calc_calls` (ordered, one entry per ./calc call: 1 if it returned the gold value).
 */
export const ARITH_VERIFIER = `${VERIFIER_PRELUDE}
run(() => {
  const exp = expected();
  const raw = readText(exp.answerFile);
  const answer = raw === null ? "" : raw.trim();
  const exact = answer === exp.answer ? 1 : 0;
  const calls = readLog("calc.jsonl").map((c) => (c && c.result === exp.answer ? 1 : 0));
  const used = calls.some((c) => c === 1) ? 1 : 0;
  emit(exact, { exact: exact, calc_used: used, calc_calls: calls }, raw === null ? "no " + exp.answerFile : undefined);
});
`;

/** The arith verifier for one task: exact match of `answerFile` (trimmed) against `answer`. */
export function arithVerifier(answer: string, answerFile: string): VerifierSpec {
  return {
    files: { "verify.cjs": ARITH_VERIFIER, "expected.json": JSON.stringify({ answer, answerFile }) },
    command: ["node", `${VERIFIER_DIR}/verify.cjs`],
  };
}

/**
 * lookup: token F1 of answer.txt against the gold answer. Sub-scores: `f1`, `exact` (normalised equality),
 * `search_hits` (ordered, one entry per ./search call: 1 if it returned a fact on the gold path), `path_coverage`
 * (fraction of gold-path facts that some search returned).
 */
export const LOOKUP_VERIFIER = `${VERIFIER_PRELUDE}${F1_CODE}
run(() => {
  const exp = expected();
  const raw = readText(exp.answerFile);
  const answer = raw === null ? "" : raw.trim();
  const f1 = answer ? tokenF1(answer, exp.answer) : 0;
  const exact = answer && normTokens(answer).join(" ") === normTokens(exp.answer).join(" ") ? 1 : 0;
  const gold = new Set(exp.path);
  const seen = new Set();
  const hits = readLog("search.jsonl").map((s) => {
    const results = Array.isArray(s && s.results) ? s.results : [];
    let hit = 0;
    for (const r of results) if (gold.has(r)) { hit = 1; seen.add(r); }
    return hit;
  });
  const coverage = gold.size ? seen.size / gold.size : 0;
  emit(f1, { f1: f1, exact: exact, search_hits: hits, path_coverage: coverage }, raw === null ? "no " + exp.answerFile : undefined);
});
`;

/**
 * files: every requirement is a check on the final workspace. `change` checks are what the task asked for; `keep`
 * checks say untouched files must stay as they were. Score = mean of change checks, or 0 if any keep check fails (so
 * doing nothing and deleting everything both score 0). Sub-scores: one per check, named `<kind>:<path>`, plus `kept`.
 */
export const FILES_VERIFIER = `${VERIFIER_PRELUDE}
function sameText(a, b) {
  return a !== null && a.replace(/\\n+$/, "") === b.replace(/\\n+$/, "");
}
function check(c) {
  if (c.kind === "file") return sameText(readText(c.path), c.content) ? 1 : 0;
  if (c.kind === "absent") return exists(c.path) ? 0 : 1;
  if (c.kind === "dir") return isDir(c.path) ? 1 : 0;
  throw new Error("unknown check kind " + c.kind);
}
run(() => {
  const exp = expected();
  const subscores = {};
  let changeSum = 0;
  let changeN = 0;
  let kept = 1;
  for (const c of exp.checks) {
    const v = check(c);
    if (c.role === "keep") { if (v === 0) kept = 0; }
    else { subscores[c.kind + ":" + c.path] = v; changeSum += v; changeN++; }
  }
  subscores.kept = kept;
  emit(changeN ? (changeSum / changeN) * kept : kept, subscores);
});
`;
