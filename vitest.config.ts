import { defineConfig } from "vitest/config";

/**
 * The slow tier: tests that run real harness CLIs, llama.cpp, sandboxes, Python (the torch worker, the Jinja
 * reference), real task verifiers over many tasks, or the compiled CLI and workers (these need dist/, which the slow
 * project's global setup builds). Everything else is the fast tier, run in-process from src/ without a build:
 * `npm run test:fast`.
 */
const SLOW_TESTS = [
  // Real harness CLIs (installed from npm on first use).
  "test/harness/**/*.test.ts",
  // llama.cpp.
  "test/engine/llamacpp*.test.ts",
  "test/engine/consistency.test.ts",
  "test/engine/lora-consistency.test.ts",
  "test/engine/padded-vocab.test.ts",
  "test/tokenizer/hf-bpe-llamacpp.test.ts",
  // Sandboxes (bwrap, and the compiled sandbox control plane the local contract drives).
  "test/sandbox/bwrap-*.test.ts",
  "test/sandbox/disk-meter.test.ts",
  "test/sandbox/launcher.test.ts",
  "test/core/kill-child.test.ts",
  "test/sandbox/local-contract.test.ts",
  "test/rollout/oracle-builtin.test.ts",
  "test/rollout/oracle-real.test.ts",
  "test/rollout/random-policy.test.ts",
  // Redis, rollout nodes in network namespaces (root), the compiled CLI.
  "test/cluster/**/*.test.ts",
  "test/dashboard/cluster.test.ts",
  // Real task programs and verifier processes, run over many generated tasks.
  "test/tasks/baselines.test.ts",
  "test/tasks/verifiers.test.ts",
  "test/tasks/programs.test.ts",
  "test/tasks/native-programs.test.ts",
  "test/tasks/load.test.ts",
  "test/tasks/clawgym-examples.test.ts",
  // Python: the Jinja reference renderer, training runs and the torch worker.
  "test/chat/jinja-python-reference.test.ts",
  "test/schedule/sketch.test.ts",
  "test/train/end-to-end.test.ts",
  "test/train/lora-e2e.test.ts",
  "test/train/kill-resume.test.ts",
  "test/train/eval-resume.test.ts",
  "test/train/rank-kill.test.ts",
  "test/train/real-cli-e2e.test.ts",
  "test/train/real-scaling-experiment.test.ts",
  "test/train/quickstart-seeds-experiment.test.ts",
  "test/train/quickstart-arms-experiment.test.ts",
  "test/train/start-from-checkpoint.test.ts",
  "test/train/warm-start-stop.test.ts",
  "test/train/warm-start-pass-rate.test.ts",
  "test/train/train-roles.test.ts",
  "test/train/branch-scope.test.ts",
  "test/train/minibatch-anchor.test.ts",
  "test/train/served-engine.test.ts",
  "test/train/cluster-train.test.ts",
  "test/train/cluster-train-remote.test.ts",
  "test/train/optimizer-reset.test.ts",
  "test/train/probe-harnesses-e2e.test.ts",
  "test/train/probe-step.test.ts",
  "test/trainer/torch.test.ts",
  "test/trainer/distributed.test.ts",
  "test/model/model-cli.test.ts",
  "test/model/qwen3-dir.test.ts",
  "test/advantage/worker-gradients.test.ts",
  "test/batch/worker-logprobs.test.ts",
  // npm pack, the compiled CLI, and the store's compiled checkpoint worker.
  "test/core/package-files.test.ts",
  "test/report/report.test.ts",
  // A real browser (Debian chromium driven by playwright-core).
  "test/dashboard/browser.test.ts",
  "test/export/export.test.ts",
  "test/tasks/cli.test.ts",
  "test/trees/cli.test.ts",
  "test/trees/captured.test.ts",
  "test/proxy/durability.test.ts",
  // Qwen3's real tokenizer and official template (~7 s to load) behind the proxy.
  "test/proxy/qwen3-fidelity.test.ts",
  "test/store/durability.test.ts",
  "test/store/sqlite.test.ts",
  // A real Postgres server (scripts/local-postgres.mjs) and the compiled store worker.
  "test/store/postgres.test.ts",
  // The CLI in a child process, fresh processes on dist/, the compiled sandbox control plane.
  "test/cli/**/*.test.ts",
  "test/rollout/explicit-registries.test.ts",
  "test/rollout/harness-fault.test.ts",
  "test/rollout/policy-hardening.test.ts",
  "test/rollout/native-programs.test.ts",
  "test/train/shipped-configs.test.ts",
  // Real rollouts in sandboxes and real torch steps through the run context, capabilities and the worker op table.
  "test/run/**/*.test.ts",
  "test/train/trainer-capabilities.test.ts",
  "test/train/capability-step.test.ts",
  "test/trainer/**/*.test.ts",
  // Qwen3's real vocabulary through llama.cpp; eslint started for the layer rules.
  "test/tokenizer/qwen3.test.ts",
  "test/core/layers.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Registries start empty (nothing registers on import): every test file gets the built-ins, as the CLI does.
    setupFiles: ["test/setup/builtins.ts"],
    // Two cores: the suite is mostly I/O-bound servers and sandboxes, two workers keep it honest.
    maxWorkers: 2,
    projects: [
      // The fast tier shares modules between the files a worker runs (isolate: false): importing src/ once per worker
      // rather than once per file makes it ~3× faster. Its files pass in any order (checked with --sequence.shuffle).
      { extends: true, test: { name: "fast", include: ["test/**/*.test.ts"], exclude: SLOW_TESTS, isolate: false } },
      { extends: true, test: { name: "slow", include: SLOW_TESTS, globalSetup: ["test/setup/build.ts"] } },
    ],
  },
});
