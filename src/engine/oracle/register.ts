import { UserError } from "../../core/errors.js";
import { registerEngine } from "../registry.js";
import { createOracleEngine } from "./oracle-engine.js";

registerEngine("oracle", "oracle — solves each rollout's task through the harness's own tools (tests, demonstrations)", async (arg, options) => {
  if (arg) throw new UserError("invalid_engine_spec", `the oracle engine takes no argument (got "oracle:${arg}")`);
  if (!options.tasks) throw new UserError("oracle_needs_rollouts", "the oracle engine only works inside rollouts (harnessrl rollout / eval / train), where it knows each rollout's task");
  return createOracleEngine(options.tasks);
});
