import { z } from "zod";
import { UserError } from "../core/errors.js";
import type { BranchLabel } from "../trees/types.js";
import type { BatchOptions } from "./build.js";
import { DEFAULT_TOKEN_BUDGET } from "./build.js";

const LABELS = ["main", "sub-agent", "compaction", "rewrite", "retry", "side"] as const satisfies readonly BranchLabel[];

/**
 * The `trees` / `batch` part of a run config (YAML), validated: filters, layout, row budget, root sharing. Unknown keys
 * are rejected so a typo does not silently fall back to a default.
 */
export const BatchConfigSchema = z
  .object({
    layout: z.enum(["tree", "flat"]).default("tree"),
    tokenBudget: z.number().int().min(1).default(DEFAULT_TOKEN_BUDGET),
    shareRootPrefixes: z.boolean().default(true),
    filter: z
      .object({
        deadLeaves: z.boolean().default(true),
        maxBranches: z.number().int().min(1).nullable().default(64),
        trajectories: z.enum(["all", "main"]).default("all"),
        auxiliaryLabels: z.array(z.enum(LABELS)).default(["sub-agent", "side", "compaction"]),
      })
      .strict()
      .default({ deadLeaves: true, maxBranches: 64, trajectories: "all", auxiliaryLabels: ["sub-agent", "side", "compaction"] }),
  })
  .strict();

export type BatchConfig = z.output<typeof BatchConfigSchema>;

/** Parses a config section into batch options (outcome rewards are added by the caller). */
export function parseBatchConfig(input: unknown, where = "batch"): Omit<BatchOptions, "outcome"> {
  const r = BatchConfigSchema.safeParse(input ?? {});
  if (!r.success) throw new UserError("invalid_config", `invalid ${where} config: ${z.prettifyError(r.error)}`);
  const c = r.data;
  return {
    layout: c.layout,
    tokenBudget: c.tokenBudget,
    shareRootPrefixes: c.shareRootPrefixes,
    filter: c.filter,
  };
}
