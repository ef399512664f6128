import type { Codec } from "../../chat/codec.js";
import { EngineError } from "../../core/errors.js";
import { ScriptedEngine } from "../../engine/scripted/scripted-engine.js";
import type { ScriptReply, ScriptRequest } from "../../engine/scripted/script-types.js";
import { getHarness } from "../../harness/registry.js";
import type { Task } from "../../tasks/task.js";
import { isSubAgentRequest, mainAgentReply, subAgentReply } from "./policy.js";

/** Where the oracle learns which task a rollout runs. The rollout stack provides it. */
export interface OracleTaskSource {
  taskForRollout(rolloutId: string): Task | undefined;
}

/**
 * The oracle engine: a scripted engine that knows each session's task (through its rollout) and solves it through the
 * harness's own tools and format, following the task's oracle steps. Its turns are rendered exactly like sampled
 * ones, with the policy's codec, so its rollouts are supervised demonstrations in the policy's own token ids, on the
 * same token path as RL rollouts. It lives in the rollout layer because it needs tasks and harness profiles; the
 * rollout stack creates it when the engine kind is `oracle`.
 *
 * Progress is remembered per session (a harness may compact or rewrite its history, so counting the tool calls still
 * visible in the conversation would undercount); a session's counter only moves when the oracle issues steps.
 */
export function createOracleEngine(source: OracleTaskSource, options: { modelId?: string; codec?: Codec } = {}): ScriptedEngine {
  const issued = new Map<string, number>();
  const script = (request: ScriptRequest): ScriptReply => {
    if (!request.rolloutId) throw new EngineError("oracle_no_rollout", "the oracle engine only answers sessions that belong to a rollout");
    const task = source.taskForRollout(request.rolloutId);
    if (!task) throw new EngineError("oracle_unknown_task", `the oracle does not know the task of rollout ${request.rolloutId}`);
    if (!task.metadata.oracle) throw new EngineError("oracle_no_solution", `task ${task.id} has no oracle steps`);
    const harness = getHarness(request.harness ?? "");
    const profile = harness.oracle;
    if (!profile) throw new EngineError("oracle_unsupported_harness", `harness ${harness.name} has no oracle profile`);
    if (isSubAgentRequest(request, profile)) return subAgentReply(request, profile);
    // Real CLIs make side calls of their own (titles, topic checks) without the shell tool: answer, issue nothing.
    if (!request.tools.some((t) => t.name === profile.shell("").name)) return { content: "Done." };
    const done = issued.get(request.sessionId) ?? 0;
    const next = mainAgentReply(task, profile, done);
    issued.set(request.sessionId, done + next.issued);
    return next.reply;
  };
  return new ScriptedEngine(script, { spec: "oracle", ...(options.modelId ? { modelId: options.modelId } : {}), ...(options.codec ? { codec: options.codec } : {}) });
}
