import { HarnessError, errorMessage, isHarnessRLError } from "../core/errors.js";
import type { HarnessDefinition } from "../harness/types.js";
import { DEFAULT_DISK_BYTES } from "../sandbox/disk-usage.js";
import type { Sandbox, SandboxBackend, SandboxLimits } from "../sandbox/types.js";
import { verifierFilesOf, workspaceSeedOf } from "../tasks/materialize.js";
import { VERIFIER_DIR, type Task } from "../tasks/task.js";
import { parseVerifierOutput, type VerifierResult } from "../tasks/verifier-result.js";
import { DEFAULT_SETTLE, waitSettled, type SettleOptions } from "./settle.js";
import { HostTools } from "./host-tools.js";
import { verifyNatively } from "./native-verify.js";
import { nativeVerifier } from "../tasks/programs/native.js";
import { rolloutSamplingSeed } from "../proxy/sampling-seeds.js";
import { pendingRolloutResult, type RolloutRequest, type RolloutResult, type RolloutStatus } from "../tasks/rollout-result.js";

/** What a rollout needs from the capture proxy: credentials for its session and its sessions' call counts. */
export interface RolloutProxy {
  /** `samplingSeed`: the base of the session's per-call sampling seeds (absent: random seeds). */
  issueSession(request: { rolloutId: string; harness: string; agentRole: string; metadata?: Record<string, unknown>; samplingSeed?: number }): { sessionId: string; apiKey: string };
  /**
   * Sessions of a rollout (the main one and any sub-agent sessions) with in-flight and recorded call counts, leaving
   * out the sessions in `exclude` (an earlier attempt's, under the same rollout id).
   */
  rolloutStatus(rolloutId: string, exclude?: ReadonlySet<string>): { sessionIds: string[]; inFlight: number; records: number };
  readonly port: number;
  readonly modelId: string;
}

export interface RolloutSettings {
  limits: SandboxLimits;
  /** Budget for the harness itself; the verifier gets its own on top. */
  harnessTimeoutMs: number;
  verifierTimeoutMs: number;
  maxTurns: number;
  maxTokens: number;
  /** A score at or above this counts as a pass (`ok`), below as `task_failed`. */
  passThreshold: number;
  settle: SettleOptions;
  /** Bytes of harness stdout/stderr kept in the result. */
  outputLimit: number;
  /**
   * Attempts per rollout while attempts end in a retryable infrastructure error (a sandbox that did not start, an
   * exec agent killed): such an error is ours, not the policy's, and a rollout lost to it is lost to its group's
   * advantages and to evaluation pairing. 1 on a cluster's nodes, whose queue retries the job instead.
   */
  attempts: number;
  /**
   * Common random numbers (src/proxy/sampling-seeds.ts): each rollout's sampling seeds derive from this key and its (task,
   * harness, sample), so every evaluation with the same key draws the same random numbers for the same rollout.
   * Absent: every call draws a random seed (training steps, whose samples of a task must be independent).
   */
  samplingSeeds?: string;
}

export const DEFAULT_ROLLOUT_SETTINGS: RolloutSettings = {
  limits: { memoryBytes: 2 * 1024 ** 3, maxPids: 512, wallClockMs: 0 },
  harnessTimeoutMs: 120_000,
  verifierTimeoutMs: 30_000,
  maxTurns: 8,
  maxTokens: 256,
  passThreshold: 1,
  settle: DEFAULT_SETTLE,
  outputLimit: 16 * 1024,
  attempts: 1,
};

/** Wait before a rollout's next attempt, times the attempts so far. */
const RETRY_BACKOFF_MS = 1_000;

/** One attempt's result, and whether its infrastructure error (if it ended in one) may pass on a new attempt. */
interface RolloutAttempt {
  result: RolloutResult;
  retryable: boolean;
}

/** Keeps .harnessrl only when it is a real folder (tool logs live there), then removes the verifier folder in it. */
const CLEAR_VERIFIER_DIR = `{ [ -d .harnessrl ] && [ ! -L .harnessrl ]; } || rm -rf .harnessrl; rm -rf ${VERIFIER_DIR}`;

/** The verifier's run: one of our own in the control plane when it can be (native-verify.ts), else in the sandbox. */
async function runVerifier(task: Task, sandbox: Sandbox, records: Record<string, Uint8Array>, settings: RolloutSettings): Promise<{ stdout: string; stderr: string; exitCode: number | null; timedOut: boolean }> {
  const program = nativeVerifier(task);
  const native = program === undefined ? undefined : await verifyNatively(program, task, sandbox, records);
  if (native) return { ...native, timedOut: false };
  // The agent may have put something where the verifier goes (.harnessrl as a file or symlink, a symlink or FIFO
  // among the verifier's files): the confined writes below would refuse it and the rollout would end as an infra
  // error, out of advantages and evaluation. Cleared inside the sandbox first, so the verifier scores it instead.
  await sandbox.exec(["sh", "-c", CLEAR_VERIFIER_DIR], { proxy: false, timeoutMs: 10_000 });
  // Through the sandbox, never plain fs: the agent may have planted symlinks in the workspace.
  for (const [rel, data] of Object.entries(verifierFilesOf(task))) await sandbox.writeFile(rel, data);
  for (const [rel, data] of Object.entries(records)) await sandbox.writeFile(rel, data);
  return sandbox.exec(task.verifier.command, { proxy: false, timeoutMs: task.verifier.timeoutMs ?? settings.verifierTimeoutMs, stdoutLimit: 64 * 1024 });
}

function classify(harnessExit: { timedOut: boolean; oomKilled: boolean }, finished: { ok: boolean }, exitCode: number | null, score: number, passThreshold: number): RolloutStatus {
  if (harnessExit.oomKilled) return "oom";
  if (harnessExit.timedOut) return "timeout";
  if (!finished.ok || exitCode !== 0) return "harness_crash";
  return score >= passThreshold ? "ok" : "task_failed";
}

/**
 * One rollout: a fresh sandbox seeded with the task's files, the harness configured to reach only the proxy with a
 * credential bound to this rollout, then settling, the verifier (installed only now, so the agent never saw it), and
 * cleanup whatever happened. Never throws: failures become statuses. An attempt that ends in a retryable
 * infrastructure error is run again, up to `settings.attempts` in all (`onRetry` hears of each failed one); the
 * result is the last attempt's, with that attempt's sessions only.
 */
export async function runRollout(request: RolloutRequest, task: Task, harness: HarnessDefinition, backend: SandboxBackend, proxy: RolloutProxy, settings: RolloutSettings, onRetry?: (failed: RolloutResult, attempt: number) => void): Promise<RolloutResult> {
  for (let attempt = 1; ; attempt++) {
    const { result, retryable } = await attemptRollout(request, task, harness, backend, proxy, settings);
    if (result.status !== "infra_error" || !retryable || attempt >= settings.attempts) return result;
    onRetry?.(result, attempt);
    // What failed is usually load (a sandbox or agent that could not start in time): give it a moment, as the
    // cluster queue's backoff does (1 s, then 2 s).
    await new Promise((resolveWait) => setTimeout(resolveWait, RETRY_BACKOFF_MS * attempt));
  }
}

async function attemptRollout(request: RolloutRequest, task: Task, harness: HarnessDefinition, backend: SandboxBackend, proxy: RolloutProxy, settings: RolloutSettings): Promise<RolloutAttempt> {
  const startedAt = Date.now();
  const result = pendingRolloutResult(request, task, startedAt);
  // An earlier attempt's sessions share the rollout id: neither its calls (some may still be in flight when its
  // sandbox was torn down) nor its records belong to this attempt.
  const earlier = new Set(proxy.rolloutStatus(request.rolloutId).sessionIds);
  const status = (): ReturnType<RolloutProxy["rolloutStatus"]> => proxy.rolloutStatus(request.rolloutId, earlier);
  let retryable = false;
  let sandbox: Sandbox | null = null;
  let tools: HostTools | null = null;
  try {
    const samplingSeed = settings.samplingSeeds === undefined ? undefined : rolloutSamplingSeed(settings.samplingSeeds, task.id, harness.name, request.sample);
    const session = proxy.issueSession({ rolloutId: request.rolloutId, harness: harness.name, agentRole: "main", metadata: { taskId: task.id, sample: request.sample }, ...(samplingSeed === undefined ? {} : { samplingSeed }) });
    const wallClockMs = settings.harnessTimeoutMs + settings.verifierTimeoutMs + settings.settle.timeoutMs + 10_000;
    // The sandbox seeds the workspace itself (owned by the sandbox's user); executables get their mode afterwards.
    const seed = workspaceSeedOf(task);
    sandbox = await backend.create({
      workspaceFiles: seed.files,
      limits: { ...settings.limits, wallClockMs },
      network: { proxy: { host: "127.0.0.1", port: proxy.port } },
      readOnlyPaths: harness.hostPaths(),
      labels: { rollout: request.rolloutId, task: task.id, harness: harness.name },
    });
    for (const rel of seed.executables) await sandbox.writeFile(rel, seed.files[rel]!, { mode: 0o755 });
    // Tools whose calls feed rewards run out of the agent's reach; its workspace gets stubs that forward to them.
    tools = await HostTools.open(task, backend, { ...settings.limits, wallClockMs }, { rollout: request.rolloutId, task: task.id });
    await tools?.attach(sandbox);
    const plan = harness.launch({
      prompt: task.prompt,
      proxyOrigin: sandbox.proxyUrl ?? `http://127.0.0.1:${proxy.port}`,
      apiKey: session.apiKey,
      model: proxy.modelId,
      workspace: sandbox.paths.workspace,
      home: sandbox.paths.home,
      maxTurns: settings.maxTurns,
      maxTokens: settings.maxTokens,
    });
    for (const [path, content] of Object.entries(plan.homeFiles)) await sandbox.writeFile(path, content, { root: "home" });
    result.timings.sandboxReadyAt = Date.now();

    const run = await sandbox.exec(plan.argv, { env: plan.env, timeoutMs: settings.harnessTimeoutMs, stdoutLimit: settings.outputLimit, stderrLimit: settings.outputLimit });
    result.timings.harnessEndedAt = Date.now();
    result.exitCode = run.exitCode;
    result.signal = run.signal;
    result.stdout = run.stdout;
    result.stderr = run.stderr;
    const finished = harness.finished({ exitCode: run.exitCode, stdout: run.stdout, stderr: run.stderr });
    result.harnessDetail = finished.detail;
    // Over the disk budget: the sandbox was killed and its disk is still full; the policy's failure, not ours.
    if (run.diskLimitHit) throw new HarnessError("sandbox_disk_limit", `the harness wrote past the sandbox's disk budget of ${settings.limits.diskBytes ?? DEFAULT_DISK_BYTES} bytes`);

    const settled = await waitSettled({ status }, settings.settle);
    result.timings.settledAt = Date.now();
    if (!settled.settled) throw new HarnessError("harness_unsettled", `rollout did not settle within ${settings.settle.timeoutMs} ms (calls still in flight)`);

    // The host's record of the tool calls, never the workspace's logs (the agent can write those).
    const records = (await tools?.records()) ?? {};
    const verify = await runVerifier(task, sandbox, records, settings);
    result.timings.verifiedAt = Date.now();
    const verifier: VerifierResult = verify.timedOut ? { score: 0, subscores: {}, error: "verifier timed out" } : parseVerifierOutput(verify.stdout);
    result.verifier = verifier;
    result.score = verifier.score;
    if (verifier.error && verify.exitCode !== 0) {
      // The verifier machinery itself failed: not the policy's fault, keep it out of advantages.
      result.status = "infra_error";
      result.error = `verifier failed (exit ${verify.exitCode}): ${verifier.error} ${verify.stderr.slice(0, 500)}`;
    } else {
      result.status = classify(run, finished, run.exitCode, verifier.score, settings.passThreshold);
      if (result.status === "harness_crash") result.error = finished.detail;
    }
  } catch (e) {
    // A harness at fault (e.g. calls left in flight after it exited) is the rollout's failure, not ours.
    result.status = e instanceof HarnessError ? "harness_crash" : "infra_error";
    result.error = isHarnessRLError(e) ? `${e.code}: ${e.message}` : errorMessage(e);
    // Our own errors say whether a new attempt may pass; an unexpected one (a bug, a failing disk) is not retried.
    retryable = isHarnessRLError(e) && e.retryable;
  } finally {
    if (sandbox) await sandbox.destroy().catch(() => undefined);
    if (tools) await tools.destroy().catch(() => undefined);
    const s = status();
    result.sessionIds = s.sessionIds;
    result.calls = s.records;
    result.timings.endedAt = Date.now();
  }
  return { result, retryable };
}
