import { isMap, isScalar, isSeq, parse as parseYaml, parseDocument } from "yaml";
import { UserError, errorMessage } from "../core/errors.js";

/**
 * `--set path=value` on the command line: one config value changed without editing the file (a seed sweep, a longer
 * run, a smaller evaluation). The value is YAML (`30`, `true`, `[pi, codex]`, `{steps: 30}`, a string); `null`
 * removes the key, so an optional setting goes back to its default.
 */
export interface ConfigOverride {
  /** Map keys, and sequence indices where the path enters a list. */
  path: (string | number)[];
  /** The parsed value; null removes the key. */
  value: unknown;
  /** As given, for messages. */
  text: string;
}

const KEY_PATH = /^[A-Za-z_][A-Za-z0-9_-]*(\.([A-Za-z_][A-Za-z0-9_-]*|\d+))*$/;

export function parseOverride(arg: string): ConfigOverride {
  const eq = arg.indexOf("=");
  const key = eq < 0 ? arg : arg.slice(0, eq);
  if (eq < 0 || !KEY_PATH.test(key)) {
    throw new UserError("invalid_arguments", `--set "${arg}": expected path=value with a dotted key path, e.g. --set budget.steps=30 or --set harnesses.0=pi`);
  }
  const raw = arg.slice(eq + 1);
  let value: unknown;
  try {
    value = raw.trim() === "" ? "" : (parseYaml(raw) as unknown);
  } catch (e) {
    throw new UserError("invalid_arguments", `--set "${arg}": the value is not YAML: ${errorMessage(e).split("\n")[0] ?? ""}`);
  }
  return { path: key.split(".").map((s) => (/^\d+$/.test(s) ? Number(s) : s)), value, text: arg };
}

/**
 * The config text with the overrides applied in order, comments and layout kept (the run directory's config.yaml is
 * this text: what the run was given). Each path must lead through mappings (or a list, by index) that exist or can be
 * created; the result is validated as a whole by the caller, so a misspelt key fails there with its dotted path.
 */
export function applyOverrides(text: string, source: string, overrides: readonly ConfigOverride[]): string {
  if (overrides.length === 0) return text;
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new UserError("invalid_config", `${source} is not valid YAML: ${doc.errors[0]?.message ?? ""}`);
  for (const o of overrides) {
    // Every step before the last must be a collection the next key can index (or absent: created as a mapping).
    for (let i = 0; i < o.path.length - 1; i++) {
      const node: unknown = doc.getIn(o.path.slice(0, i + 1), true);
      const next = o.path[i + 1];
      const at = o.path.slice(0, i + 1).join(".");
      if (node === undefined || (isScalar(node) && node.value === null)) {
        if (typeof next === "number") throw new UserError("invalid_arguments", `--set ${o.text}: ${at} is not a list in ${source}`);
        break;
      }
      if (typeof next === "number" ? !isSeq(node) : !isMap(node)) throw new UserError("invalid_arguments", `--set ${o.text}: ${at} is not a ${typeof next === "number" ? "list" : "mapping"} in ${source}`);
    }
    const last = o.path[o.path.length - 1];
    const parent: unknown = o.path.length > 1 ? doc.getIn(o.path.slice(0, -1), true) : doc.contents;
    if (typeof last === "number" && isSeq(parent) && last > parent.items.length) {
      throw new UserError("invalid_arguments", `--set ${o.text}: index ${last} is past the end of ${o.path.slice(0, -1).join(".")} (${parent.items.length} items)`);
    }
    if (o.value === null) doc.deleteIn(o.path);
    else doc.setIn(o.path, doc.createNode(o.value));
  }
  return doc.toString();
}
