import { UserError } from "../../core/errors.js";
import type { EngineAdapter } from "../../engine/registry.js";
import type { EngineSpec } from "../../engine/spec.js";

/** The engine kind the rollout stack serves itself (it needs each rollout's task, which only the stack knows). */
export const ORACLE_ENGINE = "oracle";

/** The oracle takes no target and no options: it plays the policy with the policy's codec. */
export function checkOracleSpec(spec: EngineSpec): void {
  if (spec.target || Object.keys(spec.options).length) throw new UserError("invalid_engine_spec", `the oracle engine takes no argument (got "${spec.target}${Object.keys(spec.options).length ? "?…" : ""}")`);
}

/**
 * Listed with the other engine kinds (`harnessrl list`, registered by src/builtins.ts); only `RolloutStack` can create
 * it, since it needs each rollout's task.
 */
export const oracleEngineAdapter: EngineAdapter = {
  name: ORACLE_ENGINE,
  summary: "oracle — solves each rollout's task through the harness's own tools (tests, demonstrations)",
  create: (spec) => {
    checkOracleSpec(spec);
    throw new UserError("oracle_needs_rollouts", "the oracle engine only works inside rollouts (harnessrl rollout / eval / train), where it knows each rollout's task");
  },
};
