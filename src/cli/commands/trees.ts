import { parseArgs } from "node:util";
import { UserError, errorMessage } from "../../core/errors.js";
import { openRecordedStore } from "../../export/open-store.js";
import { forestsFromStore } from "../../trees/forest.js";
import { renderForest } from "../../trees/render-text.js";
import { viewForest } from "../../trees/view.js";
import type { Command } from "../command.js";

const usage = `Usage:
  harnessrl trees --db FILE [--session ID | --rollout ID] [--nodes] [--json]

Rebuilds the per-session prefix trees from recorded calls and prints them: calls as a tree by verified parent, one
block per segment (main / sub-agent / compaction / rewrite / side), retries, history breaks, token counts (prompt,
inserted tool output or user turn, completion, trainable) and parent disagreements.

Options:
  --db FILE       call record store: a .sqlite path, sqlite:<path>, a run directory (its records.sqlite), or a
                  Postgres URL (postgres://user:password@host:port/db[?schema=NAME])
  --session ID    one session
  --rollout ID    every session of one rollout (sub-agents linked to the calls that spawned them)
  --nodes         also list the radix nodes (token runs with role and owning call)
  --json          machine-readable output (all token counts, segments, paths, disagreements)

Without --session or --rollout, prints one summary line per rollout.`;

async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, strict: true, options: { db: { type: "string" }, session: { type: "string" }, rollout: { type: "string" }, nodes: { type: "boolean" }, json: { type: "boolean" } } }));
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
  if (!values.db) throw new UserError("invalid_arguments", `trees needs --db\n\n${usage}`);
  if (values.session && values.rollout) throw new UserError("invalid_arguments", "give --session or --rollout, not both");
  const store = openRecordedStore(values.db);
  try {
    const filter: { sessionId?: string; rolloutId?: string } = {};
    if (values.session) filter.sessionId = values.session;
    if (values.rollout) filter.rolloutId = values.rollout;
    const forests = forestsFromStore(store, filter);
    if ((values.session || values.rollout) && forests.length === 0) {
      throw new UserError("not_found", values.session ? `no calls recorded for session ${values.session}` : `no calls recorded for rollout ${values.rollout}`);
    }
    const detailed = Boolean(values.session || values.rollout);
    const views = forests.map((f) => viewForest(f, { nodes: values.nodes === true }));
    if (values.json === true) {
      console.log(JSON.stringify(detailed ? views : views.map((v) => ({ rolloutId: v.rolloutId, sessions: v.sessions.map((s) => ({ sessionId: s.sessionId, subAgent: s.subAgent, calls: s.calls.length, segments: s.segments.length, paths: s.paths.length, uniqueTokens: s.uniqueTokens, flatTokens: s.flatTokens, trainableTokens: s.trainableTokens })) })), null, 2));
      return 0;
    }
    if (detailed) {
      console.log(views.map(renderForest).join("\n\n"));
      return 0;
    }
    if (views.length === 0) {
      console.log("no calls recorded");
      return 0;
    }
    for (const v of views) {
      const calls = v.sessions.reduce((n, s) => n + s.calls.length, 0);
      const paths = v.sessions.reduce((n, s) => n + s.paths.length, 0);
      const unique = v.sessions.reduce((n, s) => n + s.uniqueTokens, 0);
      const flat = v.sessions.reduce((n, s) => n + s.flatTokens, 0);
      console.log(`${v.rolloutId}  sessions ${v.sessions.length}  calls ${calls}  paths ${paths}  tokens ${unique} unique / ${flat} flat`);
    }
    console.log("\nshow one with --rollout ID or --session ID");
    return 0;
  } finally {
    store.close();
  }
}

export const treesCommand: Command = { name: "trees", summary: "print the prefix trees of recorded sessions", usage, run };
