import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InfraError } from "../../src/core/errors.js";
import { getHarness } from "../../src/harness/registry.js";
import { createCommandHarness } from "../../src/harness/real/command.js";
import { DEFAULT_ROLLOUT_SETTINGS, runRollout, type RolloutSettings } from "../../src/rollout/run-one.js";
import { RolloutStack } from "../../src/rollout/stack.js";
import type { Sandbox, SandboxBackend } from "../../src/sandbox/types.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { NATIVE_PROGRAMS_ENV } from "../../src/tasks/programs/native.js";
import { loadSuite } from "../../src/tasks/registry.js";
import type { Task } from "../../src/tasks/task.js";
import { batchForRollouts } from "../../src/train/batches.js";

/** A property of the wrapped object as it is, its methods bound to it (private fields need the real `this`). */
function passThrough(target: object, prop: string | symbol, receiver: unknown): unknown {
  const v: unknown = Reflect.get(target, prop, receiver);
  return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
}

/**
 * The real bwrap backend with a fault of the sandbox host injected: the first `failures` rollout sandboxes' first exec
 * after the harness (the verifier's; `proxy: false`) throws the error the production bug threw there (an exec agent killed
 * by a cgroup sweep, src/sandbox/bwrap/cell.ts). Everything else is the real sandbox.
 */
function faultyBackend(real: SandboxBackend, failures: number, error: () => Error): { backend: SandboxBackend; injected: () => number } {
  let injected = 0;
  const wrap = (sandbox: Sandbox): Sandbox => {
    let armed = true;
    return new Proxy(sandbox, {
      get(target, prop, receiver) {
        if (prop === "exec") {
          return async (argv: string[], options?: Parameters<Sandbox["exec"]>[1]) => {
            if (armed && options?.proxy === false) {
              armed = false;
              if (injected < failures) {
                injected++;
                throw error();
              }
            }
            return target.exec(argv, options);
          };
        }
        return passThrough(target, prop, receiver);
      },
    });
  };
  const backend = new Proxy(real, {
    get(target, prop, receiver) {
      // The rollout's own sandbox; host-side tools get sandboxes of their own from the same backend.
      if (prop === "create") return async (o: Parameters<SandboxBackend["create"]>[0]) => (o.labels?.["role"] === "host-tools" ? target.create(o) : wrap(await target.create(o)));
      return passThrough(target, prop, receiver);
    },
  });
  return { backend, injected: () => injected };
}

const agentKilled = (): Error => new InfraError("sandbox_agent", "sandbox exec agent did not start (exit SIGKILL)", { retryable: true });

describe("a rollout whose attempt ends in a retryable infrastructure error runs again on this machine", () => {
  let stack: RolloutStack;
  let task: Task;
  const settings: RolloutSettings = { ...DEFAULT_ROLLOUT_SETTINGS, attempts: 3, maxTurns: 4, maxTokens: 256 };

  beforeAll(async () => {
    // The fault sits at the verifier's exec, which the arith verifier skips when it runs in the control plane.
    process.env[NATIVE_PROGRAMS_ENV] = "0";
    stack = await RolloutStack.open({ engine: "oracle", store: "memory", sandbox: "bwrap", sandboxPool: 0 });
    task = (await loadSuite("arith:train?n=1&seed=3")).tasks[0]!;
  }, 120_000);

  afterAll(async () => {
    delete process.env[NATIVE_PROGRAMS_ENV];
    await stack?.close();
  });

  async function run(id: string, backend: SandboxBackend, s: RolloutSettings = settings, harness = getHarness("chat-agent")): Promise<{ result: RolloutResult; retried: RolloutResult[] }> {
    await harness.ensureInstalled();
    stack.assign(id, task);
    const retried: RolloutResult[] = [];
    const result = await runRollout({ rolloutId: id, taskId: task.id, harness: harness.name, sample: 0 }, task, harness, backend, stack.rolloutProxy, s, (failed) => retried.push(failed));
    return { result, retried };
  }

  it("keeps only the last attempt's sessions: in the result, in its call count and in the training batch", async () => {
    const { backend, injected } = faultyBackend(stack.backend, 1, agentKilled);
    const { result, retried } = await run("retry-once", backend);
    expect(injected()).toBe(1);
    expect(retried.map((r) => [r.status, r.error])).toEqual([["infra_error", "sandbox_agent: sandbox exec agent did not start (exit SIGKILL)"]]);
    expect(result.status, result.error ?? "").toBe("ok");
    // The failed attempt talked to the model too: its session is in the store under the same rollout id.
    const failed = retried[0]!;
    expect(failed.sessionIds).toHaveLength(1);
    expect(failed.calls).toBeGreaterThan(0);
    const all = stack.store.listSessions({ rolloutId: "retry-once" }).map((s) => s.sessionId);
    expect(all.sort()).toEqual([...failed.sessionIds, ...result.sessionIds].sort());
    expect(result.sessionIds).toHaveLength(1);
    expect(result.sessionIds).not.toContain(failed.sessionIds[0]);
    const ownCalls = stack.store.listCalls({ rolloutId: "retry-once" }).filter((c) => c.sessionId === result.sessionIds[0]);
    expect(result.calls).toBe(ownCalls.length);
    // Trained on is the outcome's own trajectory, not the failed attempt's calls scored with it.
    const built = batchForRollouts(stack.store, [result]);
    expect(built.stats.sessions).toBe(1);
    expect(new Set(built.index.calls.map((c) => c.sessionId))).toEqual(new Set(result.sessionIds));
    expect(built.stats.calls).toBe(ownCalls.length);
  }, 120_000);

  it("gives up after `attempts` attempts, reporting the last one's error", async () => {
    const { backend, injected } = faultyBackend(stack.backend, 10, agentKilled);
    const { result, retried } = await run("retry-exhausted", backend);
    expect(injected()).toBe(3);
    expect(retried).toHaveLength(2);
    expect(result.status).toBe("infra_error");
    expect(result.error).toMatch(/^sandbox_agent: /);
    expect(stack.store.listSessions({ rolloutId: "retry-exhausted" })).toHaveLength(3);
    expect(result.sessionIds).toHaveLength(1);
    // A backoff between attempts (1 s, then 2 s): what failed was most likely load. Timers run on the monotonic
    // clock and the timings are wall-clock milliseconds, so a 1,000 ms wait can read as 999 ms: allow that rounding.
    const clockSlackMs = 5;
    expect(retried[1]!.timings.startedAt - retried[0]!.timings.endedAt).toBeGreaterThanOrEqual(1_000 - clockSlackMs);
    expect(result.timings.startedAt - retried[1]!.timings.endedAt).toBeGreaterThanOrEqual(2_000 - clockSlackMs);
  }, 180_000);

  it("does not retry an infrastructure error that says it would fail again", async () => {
    const { backend, injected } = faultyBackend(stack.backend, 10, () => new InfraError("sandbox_bridge", "harnessrl-sandbox: refused", { retryable: false }));
    const { result, retried } = await run("no-retry", backend);
    expect(injected()).toBe(1);
    expect(retried).toEqual([]);
    expect(result.status).toBe("infra_error");
  }, 120_000);

  it("never retries the policy's own failure: a harness past its time budget is a timeout, run once", async () => {
    const { backend, injected } = faultyBackend(stack.backend, 0, agentKilled);
    const slow = createCommandHarness({ name: "policy-slow", command: "sleep 30" });
    const { result, retried } = await run("policy-timeout", backend, { ...settings, harnessTimeoutMs: 1_500 }, slow);
    expect(injected()).toBe(0);
    expect(result.status).toBe("timeout");
    expect(retried).toEqual([]);
  }, 120_000);
});
