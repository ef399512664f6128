import type { Protocol } from "../icr/records.js";

/** What a harness needs to know to run one rollout inside a sandbox. */
export interface LaunchContext {
  prompt: string;
  /** Proxy origin as seen from inside the sandbox, without `/v1` (e.g. `http://127.0.0.1:4100`). */
  proxyOrigin: string;
  /** The credential issued for this rollout's session. */
  apiKey: string;
  /** The model id the proxy serves (or an alias it accepts). */
  model: string;
  /** Workspace and HOME paths inside the sandbox. */
  workspace: string;
  home: string;
  maxTurns: number;
  maxTokens: number;
}

/** How to start the harness: argv + env, and config files to generate under HOME (relative paths). */
export interface LaunchPlan {
  argv: string[];
  env: Record<string, string>;
  homeFiles: Record<string, string>;
}

export interface ExitInfo {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

/** How the oracle engine drives a harness's own tools (built-in harnesses, and real CLIs through their shell tool). */
export interface OracleProfile {
  /** The tool call that runs `command` through this harness's shell tool. */
  shell(command: string): { name: string; arguments: Record<string, unknown> };
  /** For multi-agent harnesses: the delegation call that asks a sub-agent of `role` to run `command`. */
  delegate?(command: string, kind: "research" | "work"): { name: string; arguments: Record<string, unknown> };
  /** For multi-agent harnesses: the shell call a sub-agent makes. */
  subShell?(command: string): { name: string; arguments: Record<string, unknown> };
  /**
   * The oracle thinks aloud (a short reasoning before each turn), as thinking-mode models do. Templates like Qwen3's
   * print a turn's reasoning block in later calls only when it is non-empty, so demonstrations without reasoning
   * would break token-exact history at every turn.
   */
  reasons?: boolean;
}

/**
 * A harness definition: how to locate or install it, configure it to use the proxy, start it headless with the task
 * prompt, and tell it finished. Built-in and real harnesses are interchangeable everywhere.
 */
export interface HarnessDefinition {
  name: string;
  summary: string;
  kind: "builtin" | "real" | "command";
  protocol: Protocol;
  /** Locates (and, for real CLIs, installs) the harness; throws a UserError/InfraError saying what is missing. */
  ensureInstalled(): Promise<void>;
  /** Host paths the harness needs visible (read-only) inside the sandbox: its installation, its runtime. */
  hostPaths(): string[];
  launch(ctx: LaunchContext): LaunchPlan;
  /** Whether the run ended the way a finished harness ends (independent of the task's success). */
  finished(exit: ExitInfo): { ok: boolean; detail: string };
  oracle?: OracleProfile;
}
