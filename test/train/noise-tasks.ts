import type { Task } from "../../src/tasks/task.js";

/**
 * Random-score tasks for plumbing tests: the rewards carry no information, but they have variance, so GRPO advantages
 * are non-zero and the whole pipeline must move the policy (end-to-end, kill-and-resume, real-CLI runs).
 */
export function noiseTask(i: number, split: "train" | "test"): Task {
  return {
    id: `noise-${split}-${i}`,
    family: "noise",
    split,
    prompt: `Say something about the number ${i}.`,
    files: { "README.txt": `task ${i}\n` },
    verifier: { files: { "score.cjs": 'process.stdout.write(JSON.stringify({ score: Math.random(), subscores: {} }) + "\\n");\n' }, command: ["node", ".harnessrl/verifier/score.cjs"] },
    metadata: {},
  };
}
