// Where a quickstart run's failing rollouts went wrong: each failing rollout's first call is compared with the first
// calls of the same harness that passed (calcrun's correct tool call is one fixed string per harness), and counted by
// the offset of its first differing token: in the call's opening (the first `--opening` tokens: `<tool_call>\n{"`),
// or later. Printed for the before- and after-RL evaluations and for every RL step's training rollouts.
//   npm run build && node experiments/quickstart-seeds/openings.mjs RUN_DIR... [--opening 4]
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { SqliteStore } = await import(resolve(import.meta.dirname, "../../dist/store/sqlite.js"));

/** Rollout id → score, from the run's training journal and evaluation journals. */
function scores(dir) {
  const out = new Map();
  for (const file of [join(dir, "rollouts.jsonl"), join(dir, "evals", "eval-before.jsonl"), join(dir, "evals", "eval-after.jsonl")]) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (!line.trim()) continue;
      const r = JSON.parse(line);
      if (typeof r.rolloutId === "string" && r.status !== "infra_error") out.set(r.rolloutId, r.score);
    }
  }
  return out;
}

const commonPrefix = (a, b) => {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
};

/** Per bucket (eval-before, eval-after, step N): failing rollouts whose first call left every passing one in its opening, and all failing ones. */
export function openings(dir, opening) {
  const score = scores(dir);
  const store = new SqliteStore(join(dir, "records.sqlite"), { readonly: true });
  const first = new Map();
  try {
    for (const c of store.listCalls()) if (c.rolloutId && !first.has(c.rolloutId)) first.set(c.rolloutId, c);
  } finally {
    store.close();
  }
  const passing = new Map();
  for (const [id, c] of first) if (score.get(id) === 1) (passing.get(c.harness) ?? passing.set(c.harness, []).get(c.harness)).push(c.completionTokens);
  const buckets = new Map();
  for (const [id, c] of first) {
    if (score.get(id) !== 0) continue;
    const key = id.startsWith("eval-before") ? "eval-before" : id.startsWith("eval-after") ? "eval-after" : /^s(\d+)-/.test(id) ? `step ${Number(/^s(\d+)-/.exec(id)[1])}` : null;
    if (key === null) continue;
    const refs = passing.get(c.harness) ?? [];
    if (refs.length === 0) continue;
    const branch = Math.max(...refs.map((t) => commonPrefix(c.completionTokens, t)));
    const b = buckets.get(key) ?? { opening: 0, failing: 0 };
    b.failing++;
    if (branch < opening) b.opening++;
    buckets.set(key, b);
  }
  return buckets;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { opening: { type: "string", default: "4" } } });
  const opening = Number(values.opening);
  for (const dir of positionals) {
    const b = openings(dir, opening);
    const show = (k) => (b.has(k) ? `${b.get(k).opening}/${b.get(k).failing}` : "-");
    const steps = [...b.keys()].filter((k) => k.startsWith("step")).sort((x, y) => Number(x.slice(5)) - Number(y.slice(5)));
    console.log(`${dir}: failing in the opening / failing — before RL ${show("eval-before")}, after RL ${show("eval-after")}; training steps ${steps.map((k) => show(k)).join(" ")}`);
  }
}
