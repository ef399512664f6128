import { defineConfig } from "vitest/config";

/**
 * The slow tier: tests that run real harness CLIs, llama.cpp, bwrap sandboxes, training through the torch worker,
 * or the compiled CLI and sandbox agent (these need dist/, which the slow project's global setup builds). Everything
 * else is the fast tier, run in-process from src/ without a build: `npm run test:fast`.
 */
const SLOW_TESTS = [
  // Real harness CLIs (installed from npm on first use).
  "test/harness/**/*.test.ts",
  // llama.cpp.
  "test/engine/llamacpp*.test.ts",
  "test/engine/consistency.test.ts",
  "test/tokenizer/hf-bpe-llamacpp.test.ts",
  // Sandboxes (bwrap, and the compiled sandbox control plane the local contract drives).
  "test/sandbox/bwrap-*.test.ts",
  "test/sandbox/local-contract.test.ts",
  "test/rollout/oracle-builtin.test.ts",
  "test/rollout/random-policy.test.ts",
  // Training runs and the torch worker.
  "test/train/end-to-end.test.ts",
  "test/train/start-from-checkpoint.test.ts",
  "test/train/train-roles.test.ts",
  "test/train/minibatch-anchor.test.ts",
  "test/trainer/torch.test.ts",
  "test/model/model-cli.test.ts",
  "test/advantage/worker-gradients.test.ts",
  "test/batch/worker-logprobs.test.ts",
  // The compiled CLI, and the store's compiled checkpoint worker.
  "test/report/report.test.ts",
  "test/export/export.test.ts",
  "test/tasks/cli.test.ts",
  "test/trees/cli.test.ts",
  "test/trees/captured.test.ts",
  "test/proxy/durability.test.ts",
  "test/store/durability.test.ts",
  "test/store/sqlite.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Two cores: the suite is mostly I/O-bound servers and sandboxes, two workers keep it honest.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: "fast", include: ["test/**/*.test.ts"], exclude: SLOW_TESTS } },
      { extends: true, test: { name: "slow", include: SLOW_TESTS, globalSetup: ["test/setup/build.ts"] } },
    ],
  },
});
