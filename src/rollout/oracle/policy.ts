import type { OracleProfile } from "../../harness/types.js";
import { stepAsShellCommand } from "../../tasks/shell.js";
import type { OracleStep, Task } from "../../tasks/task.js";
import type { ScriptReply, ScriptRequest } from "../../engine/scripted/script-types.js";

/** Programs whose calls are look-ups (delegated to a research sub-agent by multi-agent harnesses). */
const RESEARCH = /^\.\/(search|calc)\b/;

function toolNames(request: ScriptRequest): Set<string> {
  return new Set(request.tools.map((t) => t.name));
}

/** Steps already taken = assistant tool calls this conversation made (history the harness kept) or the memory. */
function isResearch(step: OracleStep): boolean {
  return step.kind === "run" && RESEARCH.test(step.command);
}

function withReasoning(profile: OracleProfile, reply: ScriptReply, thought: string): ScriptReply {
  return profile.reasons ? { reasoning: thought, ...reply } : reply;
}

function finalReply(task: Task): ScriptReply {
  const answer = task.metadata.oracle?.answer;
  return { content: answer ? `Done. The answer is ${answer}.` : "Done." };
}

/**
 * A sub-agent of a multi-agent harness: run the instruction with the shell, then report the first output line.
 * Stateless: everything it needs is in its own conversation.
 */
export function subAgentReply(request: ScriptRequest, profile: OracleProfile): ScriptReply {
  const instruction = request.messages.find((m) => m.role === "user")?.content ?? "";
  const lastTool = [...request.messages].reverse().find((m) => m.role === "tool");
  if (!lastTool) return { toolCalls: [profile.subShell!(instruction)] };
  const line = lastTool.content.split("\n").find((l) => l.trim() !== "") ?? "";
  return { content: line.trim() || "done" };
}

/**
 * The next turn of a harness's main agent given how many task steps it has already issued. Single agents issue one
 * step per turn through their shell tool; multi-agent harnesses delegate consecutive look-ups together (parallel
 * sub-agents) and other steps one at a time.
 */
export function mainAgentReply(task: Task, profile: OracleProfile, done: number): { reply: ScriptReply; issued: number } {
  const steps = task.metadata.oracle?.steps ?? [];
  if (done >= steps.length) return { reply: withReasoning(profile, finalReply(task), "All steps are done; report the result."), issued: 0 };
  const first = steps[done]!;
  if (!profile.delegate) {
    const command = stepAsShellCommand(first);
    return { reply: withReasoning(profile, { toolCalls: [profile.shell(command)] }, `Step ${done + 1} of ${steps.length}: run \`${command.split("\n")[0] ?? ""}\`.`), issued: 1 };
  }
  if (!isResearch(first)) return { reply: { toolCalls: [profile.delegate(stepAsShellCommand(first), "work")] }, issued: 1 };
  const batch: OracleStep[] = [];
  for (let i = done; i < steps.length && isResearch(steps[i]!); i++) batch.push(steps[i]!);
  return { reply: { toolCalls: batch.map((s) => profile.delegate!(stepAsShellCommand(s), "research")) }, issued: batch.length };
}

/** Whether this request comes from a sub-agent: its tools include the sub-agent shell and not the delegation tools. */
export function isSubAgentRequest(request: ScriptRequest, profile: OracleProfile): boolean {
  if (!profile.subShell || !profile.delegate) return false;
  const names = toolNames(request);
  return names.has(profile.subShell("x").name) && !names.has(profile.delegate("x", "work").name);
}
