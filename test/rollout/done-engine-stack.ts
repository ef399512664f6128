import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { RolloutStack } from "../../src/rollout/stack.js";

/**
 * A rollout stack whose scripted model answers every call with "done": for tests whose harness is a shell command
 * (the policy under test), where the model's words do not matter. `engineQuery` goes on the scripted engine's spec
 * (e.g. `delay=400`).
 */
export async function openDoneStack(dir: string, sandbox: "bwrap" | "local-unsafe", engineQuery = ""): Promise<RolloutStack> {
  const engine = join(dir, "engine.mjs");
  writeFileSync(engine, `export default () => ({ content: "done" });`);
  return RolloutStack.open({ engine: `scripted:${engine}${engineQuery ? `?${engineQuery}` : ""}`, store: "memory", sandbox, sampling: { temperature: 1, maxTokens: 16 } });
}
