/**
 * The run config of the warm-start stop tests (a real warm start: oracle demonstrations through chat-agent in bwrap
 * sandboxes, SFT in the torch worker, no RL steps), without its `warm_start` section. `maxTokens` is the policy's
 * sampling budget: a test whose policy must solve tasks (held-in checks) needs room for a whole answer.
 */
export function tinyWarmStartRun(name: string, maxTokens: number): Record<string, unknown> {
  return {
    name,
    seed: 3,
    model: { preset: "tiny-1m", seed: 3 },
    trainer: { threads: 1 },
    engine: { kind: "llamacpp", threads: 1, sequences: 4 },
    sampling: { temperature: 1, max_tokens: maxTokens },
    rollout: { sandbox: "bwrap", concurrency: 4, max_turns: 2, timeout_s: 60, memory_mb: 1024 },
    harnesses: ["chat-agent"],
    tasks: { train: "calcrun:train?n=4&seed=1" },
    budget: { steps: 0, tasks_per_step: 1, samples: 2 },
  };
}
