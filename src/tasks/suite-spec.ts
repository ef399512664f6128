import { z } from "zod";
import { UserError } from "../core/errors.js";
import { parseSpec } from "../core/registry.js";
import { formatIssues, SPLITS, type Split } from "./task.js";

/**
 * Suite spec syntax: `<suite>[:split][?key=value&…]`, e.g. `arith:test`, `lookup:train?n=200&seed=3`, `mix`,
 * `dir:/data/clawgym:test`. Options: `n` (number of tasks; generated suites only), `seed` (generated suites only).
 */
export interface SuiteSpec {
  /** Registered suite name, or "dir". */
  name: string;
  /** Folder for `dir:` specs. */
  path?: string;
  split?: Split;
  n?: number;
  seed?: number;
}

const optionsSchema = z.strictObject({
  n: z.coerce.number().int().min(1).max(1_000_000).optional(),
  seed: z.coerce.number().int().min(0).max(2 ** 31 - 1).optional(),
});

export function parseSuiteSpec(spec: string): SuiteSpec {
  const trimmed = spec.trim();
  if (!trimmed) throw new UserError("invalid_suite_spec", "empty task suite spec");
  const q = trimmed.indexOf("?");
  let head = q < 0 ? trimmed : trimmed.slice(0, q);
  const query = q < 0 ? "" : trimmed.slice(q + 1);
  let split: Split | undefined;
  for (const s of SPLITS) {
    if (head.endsWith(`:${s}`)) {
      split = s;
      head = head.slice(0, -(s.length + 1));
      break;
    }
  }
  const raw: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(query)) raw[k] = v;
  const opts = optionsSchema.safeParse(raw);
  if (!opts.success) throw new UserError("invalid_suite_spec", `task suite spec "${spec}": ${formatIssues(opts.error)}`);
  const { scheme, arg } = parseSpec(head);
  const out: SuiteSpec = { name: scheme };
  if (scheme === "dir") {
    if (!arg) throw new UserError("invalid_suite_spec", `task suite spec "${spec}": dir: needs a folder path`);
    out.path = arg;
  } else if (head.includes(":")) {
    throw new UserError("invalid_suite_spec", `task suite spec "${spec}": unknown split "${arg}" (use train or test)`);
  }
  if (split) out.split = split;
  if (opts.data.n !== undefined) out.n = opts.data.n;
  if (opts.data.seed !== undefined) out.seed = opts.data.seed;
  return out;
}
