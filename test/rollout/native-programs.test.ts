import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createCommandHarness } from "../../src/harness/real/command.js";
import { DEFAULT_ROLLOUT_SETTINGS, runRollout } from "../../src/rollout/run-one.js";
import type { RolloutStack } from "../../src/rollout/stack.js";
import { openDoneStack } from "./done-engine-stack.js";
import { BwrapBackend } from "../../src/sandbox/bwrap/backend.js";
import { NATIVE_PROGRAMS_ENV, nativeCounters } from "../../src/tasks/programs/native.js";
import { loadSuite } from "../../src/tasks/registry.js";
import type { Task } from "../../src/tasks/task.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

/**
 * Our own tool and verifier programs run in the control plane (src/tasks/programs/native.ts) instead of in sandboxes.
 * Each scenario is one policy (a shell command as the harness) run twice through real bwrap sandboxes, natively and
 * with HARNESSRL_NATIVE_PROGRAMS=0, and must end the same: status, score, sub-scores (the tool record), and what the
 * tool calls printed. The counters and the sandboxes started show which way each ran.
 */
describe("built-in tools and verifiers run natively give the rollout its sandboxed result", () => {
  let stack: RolloutStack;
  let arith: Task;
  let calcrun: Task;
  let lookuprun: Task;
  let seq = 0;

  beforeAll(async () => {
    stack = await openDoneStack(tempDir("hrl-native-"), "bwrap");
    arith = (await loadSuite("arith:test?n=1&seed=5")).tasks[0]!;
    calcrun = (await loadSuite("calcrun:train?n=1&seed=1")).tasks[0]!;
    lookuprun = (await loadSuite("lookuprun:train?n=1&seed=2")).tasks[0]!;
  }, 120_000);

  afterEach(() => {
    delete process.env[NATIVE_PROGRAMS_ENV];
  });

  afterAll(async () => {
    await stack?.close();
  });

  function sandboxesStarted(): number {
    const backend = stack.backend;
    if (!(backend instanceof BwrapBackend)) throw new Error("the test needs the bwrap backend");
    const s = backend.poolStats();
    return s.hits + s.misses;
  }

  async function once(task: Task, command: string, native: boolean) {
    if (native) delete process.env[NATIVE_PROGRAMS_ENV];
    else process.env[NATIVE_PROGRAMS_ENV] = "0";
    const harness = createCommandHarness({ name: `policy-${++seq}`, command });
    const counters = { ...nativeCounters };
    const started = sandboxesStarted();
    const r = await runRollout({ rolloutId: `native-${seq}`, taskId: task.id, harness: harness.name, sample: 0 }, task, harness, stack.backend, stack.rolloutProxy, DEFAULT_ROLLOUT_SETTINGS);
    const delta = Object.fromEntries(Object.entries(nativeCounters).map(([k, v]) => [k, v - counters[k as keyof typeof counters]]));
    return { outcome: { status: r.status, score: r.score, verifier: r.verifier, stdout: r.stdout, exitCode: r.exitCode, error: r.error }, delta, sandboxes: sandboxesStarted() - started };
  }

  async function both(task: Task, command: string) {
    const native = await once(task, command, true);
    const sandboxed = await once(task, command, false);
    expect(native.outcome).toEqual(sandboxed.outcome);
    expect(sandboxed.delta).toEqual({ toolCalls: 0, toolFallbacks: 0, verifierRuns: 0, verifierFallbacks: 0 });
    return { native, sandboxed };
  }

  it("an honest policy whose calls also fail, print usage and divide: one sandbox instead of two, same record", async () => {
    const expr = arith.metadata["expression"] as string;
    const calls = [`"1 + 1"`, `"1/0"`, "", `"7/2"`, `2.5 x 4`, `abc`].map((a) => `./calc ${a}; echo "rc=$?"`).join("; ");
    const { native, sandboxed } = await both(arith, `${calls}; ./calc "${expr}" > answer.txt`);
    expect(native.outcome.status).toBe("ok");
    expect(native.outcome.stdout).toContain("rc=2");
    expect(native.delta).toEqual({ toolCalls: 7, toolFallbacks: 0, verifierRuns: 1, verifierFallbacks: 0 });
    expect([native.sandboxes, sandboxed.sandboxes]).toEqual([1, 2]);
  }, 60_000);

  it("the quickstart's task, solved the oracle's way", async () => {
    const command = calcrun.metadata.oracle!.steps.map((s) => (s.kind === "run" ? s.command : "")).filter(Boolean).join("; ");
    const { native } = await both(calcrun, command);
    expect(native.outcome.status).toBe("ok");
    expect(native.delta).toMatchObject({ verifierRuns: 1, verifierFallbacks: 0 });
  }, 60_000);

  it("an argument naming a file, output past the tool's 64 KiB, and a call the native run hands back to a sandbox", async () => {
    // 20,000 nested parentheses overflow the stack either way, but how deep the native run may go differs from a
    // process of its own: that call and every later one go to a tool sandbox started then, whose log is seeded with
    // the calls made so far, so calc_calls keeps all four in order.
    const expr = arith.metadata["expression"] as string;
    const big = `$(yes 999999999999999999999999999999 | head -n 2600 | paste -sd'*' -)`;
    const deep = `$(printf '(%.0s' $(seq 20000))1$(printf ')%.0s' $(seq 20000))`;
    const command = `echo '6*7' > e.txt; ./calc e.txt; echo "rc=$?"; ./calc "${big}" | tail -c 80; ./calc "${deep}"; echo "rc=$?"; ./calc "${expr}" > answer.txt`;
    const { native } = await both(arith, command);
    expect(native.outcome.status).toBe("ok");
    expect(native.outcome.stdout).toMatch(/rc=1\n[0-9]{79}\nrc=1\n$/);
    // One fallback either way: the 78,000-digit product runs natively (~60 ms) unless a loaded machine pushes it past
    // the native run's 250 ms budget (seen once in CI); then it is the call handed back, and the deep one goes
    // straight to the tool sandbox without a native try. The file argument always runs natively.
    expect(native.delta["toolFallbacks"]).toBe(1);
    expect([1, 2]).toContain(native.delta["toolCalls"]);
    expect(native.sandboxes).toBe(2);
    expect(native.outcome.verifier?.subscores["calc_calls"]).toEqual([0, 0, 0, 1]);
  }, 120_000);

  it("answers the verifier cannot read natively (a symlink, a file over 1 MiB) go to the sandboxed verifier", async () => {
    const gold = arith.metadata.answer!;
    const link = await both(arith, `echo ${gold} > g.txt; ln -s g.txt answer.txt`);
    expect(link.native.outcome.status).toBe("ok");
    expect(link.native.delta).toMatchObject({ verifierRuns: 0, verifierFallbacks: 1 });
    const big = await both(arith, `{ echo ${gold}; head -c 1100000 /dev/zero | tr '\\0' ' '; } > answer.txt`);
    expect(big.native.outcome.status).toBe("ok");
    expect(big.native.delta).toMatchObject({ verifierFallbacks: 1 });
  }, 120_000);

  it("answers the verifier reads natively whatever the agent left: a folder, nothing, a .harnessrl file, forged logs", async () => {
    const gold = arith.metadata.answer!;
    const line = JSON.stringify({ expr: arith.metadata["expression"], result: gold });
    const commands = [
      "mkdir answer.txt",
      "true",
      `rm -rf .harnessrl; echo x > .harnessrl; echo ${gold} > answer.txt`,
      `mkdir -p .harnessrl/verifier/logs; echo '${line}' > .harnessrl/verifier/logs/calc.jsonl; echo '{"answer":"${gold}","answerFile":"x"}' > .harnessrl/verifier/expected.json; printf ' ${gold}\\n\\n' > answer.txt`,
    ];
    for (const command of commands) {
      const { native } = await both(arith, command);
      expect(native.delta, command).toMatchObject({ verifierRuns: 1, verifierFallbacks: 0 });
    }
  }, 120_000);

  it("a task whose other tool is not one of ours: the search sandbox as before, the lookup verifier natively", async () => {
    const { native } = await both(lookuprun, lookuprun.metadata.oracle!.steps.map((s) => (s.kind === "run" ? s.command : "")).join("; "));
    expect(native.outcome.status).toBe("ok");
    expect(native.delta).toEqual({ toolCalls: 0, toolFallbacks: 0, verifierRuns: 1, verifierFallbacks: 0 });
    expect(native.sandboxes).toBe(2);
    // Partial, wrong and missing answers: the F1 and exact sub-scores as the sandboxed verifier gives them.
    const answer = lookuprun.metadata.answer!;
    const file = lookuprun.metadata.answerFile ?? "answer.txt";
    for (const command of [`echo 'The ${answer}, probably' > ${file}`, `echo nothing here > ${file}`, "true", `printf '\n\n' > ${file}`]) {
      const r = await both(lookuprun, command);
      expect(r.native.delta, command).toMatchObject({ verifierRuns: 1, verifierFallbacks: 0 });
    }
  }, 120_000);
});
