import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { Codec } from "../chat/codec.js";
import { UserError } from "../core/errors.js";
import { createEngine } from "../engine/index.js";
import { parseEngineSpec, type EngineSpec } from "../engine/spec.js";
import type { SamplingEngine, SamplingParams } from "../engine/types.js";
import { createHistoryPlanner } from "../history/index.js";
import { ProxyServer } from "../proxy/index.js";
import { openSandboxBackend } from "../sandbox/index.js";
import type { SandboxBackend } from "../sandbox/types.js";
import { openStore, sqliteFileOf } from "../store/registry.js";
import type { Store } from "../store/types.js";
import type { Task } from "../tasks/task.js";
import type { Tokenizer } from "../tokenizer/types.js";
import { createOracleEngine } from "./oracle/oracle-engine.js";
import { ORACLE_ENGINE, checkOracleSpec } from "./oracle/register.js";
import type { RolloutProxy } from "./run-one.js";

export interface StackOptions {
  /** The engine: structured (run contexts), or the CLI text form `kind:target?options` (parsed here, once). */
  engine: EngineSpec | string;
  /** The policy's codec: the scripted and oracle engines render with it (default: the tiny byte codec). */
  codec?: Codec;
  /** Store spec (`memory`, `sqlite:<path>`, `<path>.sqlite`). */
  store: string;
  sandbox: string;
  sampling?: Partial<SamplingParams>;
  /** Host paths hidden from sandboxes (the store's folder is always hidden). */
  hidePaths?: string[];
  /**
   * Warm sandboxes kept ready: the rollout concurrency, so a wave of rollouts starts without cold sandbox starts
   * (the backend's default of 2 would leave 14 of 16 concurrent rollouts a ~160 ms cold start each).
   */
  sandboxPool?: number;
  /** The sandbox backend's state root (default: its own; `HARNESSRL_SANDBOX_ROOT`). */
  sandboxStateRoot?: string;
}

/** A cheap identity check of two tokenizers: kind, vocabulary and the ids of a probe text with special tokens. */
function sameTokenizer(a: Tokenizer, b: Tokenizer): boolean {
  if (a === b) return true;
  const probe = "<|im_start|>user\nHello, world: ls -la && echo 12345 café<|im_end|>\n";
  return a.kind === b.kind && a.vocabSize === b.vocabSize && a.encode(probe).join(",") === b.encode(probe).join(",");
}

/**
 * Everything a rollout needs, in one process: engine, store, token-exact history, the capture proxy on 127.0.0.1 and
 * a sandbox backend. The oracle engine (kind `oracle`) is created here: it needs each rollout's task (`assign`).
 */
export class RolloutStack {
  private constructor(
    readonly engine: SamplingEngine,
    readonly store: Store,
    readonly proxy: ProxyServer,
    readonly backend: SandboxBackend,
    private readonly taskByRollout: Map<string, Task>,
  ) {}

  static async open(options: StackOptions): Promise<RolloutStack> {
    const taskByRollout = new Map<string, Task>();
    const spec = typeof options.engine === "string" ? parseEngineSpec(options.engine) : options.engine;
    if (spec.kind === ORACLE_ENGINE) checkOracleSpec(spec);
    const storePath = sqliteFileOf(options.store);
    if (storePath) mkdirSync(dirname(storePath), { recursive: true });
    const store = openStore(options.store);
    const codec = options.codec ? { codec: options.codec } : {};
    const engine = spec.kind === ORACLE_ENGINE ? createOracleEngine({ taskForRollout: (id) => taskByRollout.get(id) }, codec) : await createEngine(spec, codec);
    if (options.codec && !sameTokenizer(engine.tokenizer, options.codec.tokenizer)) {
      await engine.close();
      store.close();
      throw new UserError("codec_mismatch", `engine ${engine.spec} tokenizes with ${engine.tokenizer.kind} (vocabulary ${engine.tokenizer.vocabSize}), not with the policy's ${options.codec.tokenizer.kind} (vocabulary ${options.codec.tokenizer.vocabSize}): its model directory is not the policy's`);
    }
    const proxy = new ProxyServer({ engine, store, planner: createHistoryPlanner(store), ...(options.sampling ? { sampling: options.sampling } : {}), modelAliases: [] });
    await proxy.listen(0, "127.0.0.1");
    const hidePaths = [...(options.hidePaths ?? []), ...(storePath ? [dirname(storePath)] : [])];
    const pool = options.sandboxPool === undefined ? {} : { pool: { size: Math.max(0, Math.min(256, Math.floor(options.sandboxPool))) } };
    const stateRoot = options.sandboxStateRoot === undefined ? {} : { stateRoot: options.sandboxStateRoot };
    let backend: SandboxBackend;
    try {
      backend = await openSandboxBackend(options.sandbox, { hidePaths, ...pool, ...stateRoot });
    } catch (e) {
      // A sandbox host that cannot start: close what was opened, so a node retrying job after job leaks nothing.
      await proxy.close().catch(() => undefined);
      await engine.close().catch(() => undefined);
      store.close();
      throw e;
    }
    return new RolloutStack(engine, store, proxy, backend, taskByRollout);
  }

  /** Registers a rollout's task (for the oracle) before the rollout starts. */
  assign(rolloutId: string, task: Task): void {
    this.taskByRollout.set(rolloutId, task);
  }

  /** The proxy as the rollout runner sees it. */
  get rolloutProxy(): RolloutProxy {
    const { proxy, store, engine } = this;
    return {
      port: proxy.port,
      modelId: engine.model.id,
      issueSession: (r) => proxy.issueSession(r),
      rolloutStatus: (rolloutId, exclude) => {
        const sessions = store.listSessions({ rolloutId }).filter((s) => !exclude?.has(s.sessionId));
        let inFlight = 0;
        let records = 0;
        for (const s of sessions) {
          const st = proxy.sessionStatus(s.sessionId);
          inFlight += st.inFlight;
          records += st.records;
        }
        return { sessionIds: sessions.map((s) => s.sessionId), inFlight, records };
      },
    };
  }

  async close(): Promise<void> {
    await this.backend.close();
    await this.proxy.close();
    await this.engine.close();
    this.store.close();
  }
}
