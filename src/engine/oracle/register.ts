import { UserError } from "../../core/errors.js";
import type { EngineAdapter } from "../registry.js";
import { createOracleEngine } from "./oracle-engine.js";

/** The `oracle` engine adapter (registered by src/builtins.ts). */
export const oracleEngineAdapter: EngineAdapter = {
  name: "oracle",
  summary: "oracle — solves each rollout's task through the harness's own tools (tests, demonstrations)",
  create: async (arg, options) => {
    if (arg) throw new UserError("invalid_engine_spec", `the oracle engine takes no argument (got "oracle:${arg}")`);
    if (!options.tasks) throw new UserError("oracle_needs_rollouts", "the oracle engine only works inside rollouts (harnessrl rollout / eval / train), where it knows each rollout's task");
    return createOracleEngine(options.tasks);
  },
};
