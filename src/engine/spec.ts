import { UserError } from "../core/errors.js";
import { parseSpec } from "../core/registry.js";

/**
 * A structured engine spec: which adapter, where it is, which policy's model directory it serves and the adapter's
 * options. Run contexts build these from config; the `scheme:target?key=value` text form exists only as a CLI input
 * (`--engine`) and is parsed once by `parseEngineSpec`.
 */
export interface EngineSpec {
  /** Registry scheme: `llamacpp`, `vllm`, `sglang`, `scripted`, `oracle`, … */
  kind: string;
  /** What the adapter points at: a server URL (vllm, sglang), a script module (scripted); a model directory for llamacpp when `modelDir` is unset. */
  target: string;
  /** The policy's model directory (weights, tokenizer, chat template) when the target does not name it. */
  modelDir?: string;
  /** Adapter options (what follows `?` in the text form); each adapter validates its own. */
  options: Readonly<Record<string, string | number>>;
}

/** `kind`, `kind:target` or `kind:target?key=value&…`; the target may itself contain colons (URLs). */
export function parseEngineSpec(text: string): EngineSpec {
  const { scheme: kind, arg: rest } = parseSpec(text);
  if (!kind) throw new UserError("invalid_engine_spec", `engine spec "${text}" has no kind (expected kind:target?options, e.g. llamacpp:<model dir>)`);
  const q = rest.indexOf("?");
  const target = q < 0 ? rest : rest.slice(0, q);
  const options: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(q < 0 ? "" : rest.slice(q + 1))) options[key] = value;
  return { kind, target, options };
}

/** The text form, for display and records (`engine.spec`); never parsed back inside a run. */
export function formatEngineSpec(spec: EngineSpec): string {
  const query = new URLSearchParams(stringOptions(spec));
  if (spec.modelDir !== undefined && spec.target !== "") query.set("model_dir", spec.modelDir);
  const target = spec.target || spec.modelDir || "";
  const q = query.toString();
  return `${spec.kind}${target || q ? ":" : ""}${target}${q ? `?${q}` : ""}`;
}

/** Options as strings, the form adapters validate (zod coercion covers numbers given by config). */
export function stringOptions(spec: EngineSpec): Record<string, string> {
  return Object.fromEntries(Object.entries(spec.options).map(([k, v]) => [k, String(v)]));
}
