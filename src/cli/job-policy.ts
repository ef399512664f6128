import { createHash } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { EngineSpec } from "../engine/spec.js";

/** Files of a directory tree (sorted, relative paths) with their size and modification time. */
function treeStamp(dir: string, into: string[] = [], prefix = ""): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const st = statSync(path);
    if (st.isDirectory()) treeStamp(path, into, `${prefix}${name}/`);
    else into.push(`${prefix}${name}:${st.size}:${Math.round(st.mtimeMs)}`);
  }
  return into;
}

/**
 * What a `harnessrl eval` / `rollout` job samples with, as a digest for its journal (src/eval/journal.ts): the engine
 * spec, the files it reads (its model directory, a scripted engine's module: names, sizes and modification times, so
 * weights rewritten in place are another policy) and the sampling and rollout settings. Running the job again with the
 * same --out continues it only when all of these are unchanged.
 */
export function jobPolicy(engine: EngineSpec, settings: unknown): string {
  // The target is a model directory (llamacpp), a script module (scripted) or a URL (servers: nothing on disk).
  const paths = [...new Set([engine.modelDir, engine.target].filter((p): p is string => Boolean(p)).map((p) => resolve(p)))].filter((p) => existsSync(p)).sort();
  const stamps = paths.map((p) => {
    const st = statSync(p);
    return { path: p, files: st.isDirectory() ? treeStamp(p) : [`${st.size}:${Math.round(st.mtimeMs)}`] };
  });
  const digest = createHash("sha256").update(JSON.stringify({ engine, stamps, settings })).digest("hex").slice(0, 16);
  return `${engine.kind}:${digest}`;
}
