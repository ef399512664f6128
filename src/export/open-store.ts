import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { UserError } from "../core/errors.js";
import { parseSpec } from "../core/registry.js";
import { openStore } from "../store/registry.js";
import type { Store } from "../store/types.js";

/**
 * Opens a recorded store for the read-side commands (`trees`, `export`). Unlike the proxy, reading never creates an
 * empty database: a path that does not exist is a user error. A run directory means its `records.sqlite`.
 * `sqlite:<path>` and registered `scheme:arg` specs pass through to the store registry.
 */
export function openRecordedStore(spec: string): Store {
  const s = spec.trim();
  if (s === "") throw new UserError("invalid_arguments", "--db needs a store file");
  const { scheme, arg } = parseSpec(s);
  // `sqlite:<path>` or a plain path (which may contain colons) is read here; another `scheme:arg` goes to the registry.
  const path = scheme === "sqlite" ? arg : s.includes(":") && /^[a-z][a-z0-9+-]*$/i.test(scheme) ? null : s;
  if (path === null) return openStore(s);
  if (!existsSync(path)) throw new UserError("store_not_found", `no call record store at ${path}`);
  // A run directory (harnessrl rollout / eval / train --out) keeps its records in records.sqlite.
  if (statSync(path).isDirectory()) {
    const inRun = join(path, "records.sqlite");
    if (!existsSync(inRun)) throw new UserError("store_not_found", `${path} is a directory without records.sqlite`);
    return openStore(`sqlite:${inRun}`);
  }
  return openStore(`sqlite:${path}`);
}
