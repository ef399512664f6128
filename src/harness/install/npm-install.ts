import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, delimiter, join } from "node:path";
import { z } from "zod";
import { HarnessError, InfraError } from "../../core/errors.js";
import { onExitCleanup } from "../../core/exit-cleanup.js";
import { killProcessGroup, killReapedGroup } from "../../core/process-group.js";
import { harnessCacheDir } from "./cache.js";
import { alive, withDirLock } from "./lock.js";
import type { NpmPin } from "./pins.js";

const MARKER = ".harnessrl-install.json";
const markerSchema = z.object({ package: z.string(), version: z.string() });

/** The npm prefix a pinned package is (or will be) installed into. */
export function pinPrefix(pin: NpmPin): string {
  return join(harnessCacheDir(), `${pin.key}@${pin.version}`);
}

/** The package's own folder inside its prefix. */
export function pinPackageDir(pin: NpmPin): string {
  return join(pinPrefix(pin), "node_modules", ...pin.package.split("/"));
}

/** Whether the pinned package is completely installed (the marker is written last, just before the atomic rename). */
export function isInstalled(pin: NpmPin): boolean {
  const marker = join(pinPrefix(pin), MARKER);
  if (!existsSync(marker)) return false;
  try {
    const m = markerSchema.parse(JSON.parse(readFileSync(marker, "utf8")));
    return m.package === pin.package && m.version === pin.version;
  } catch {
    return false;
  }
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolveRun, reject) => {
    // A process group of its own: a package's install script that signals "its group" reaches npm and itself, never
    // us; our exit (signal or error) takes the whole install down with it.
    const child = spawn(file, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    const pgid = child.pid;
    let reaped = false; // after that, only the guarded kill: the pid may have been recycled
    const killGroup = (): void => {
      if (pgid !== undefined) (reaped ? killReapedGroup : killProcessGroup)(pgid);
    };
    const unregister = onExitCleanup(killGroup);
    let output = "";
    const keep = (b: Buffer): void => {
      output = (output + b.toString("utf8")).slice(-8000);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.on("error", (e) => {
      unregister();
      reject(e);
    });
    child.on("exit", () => {
      reaped = true;
    });
    child.on("close", (code) => {
      unregister();
      killGroup(); // a script's leftover background process
      resolveRun({ code, output });
    });
  });
}

export interface InstallOptions {
  /** Directory of the `node` that runs the package's install scripts (default: ours). */
  nodeBinDir?: string;
  /** Progress lines (installation can take minutes). */
  log?: (line: string) => void;
}

/**
 * Installs a pinned npm package into its own prefix, once: idempotent (a complete install is never touched again),
 * serialised across processes by a lock, and atomic (npm runs in a scratch folder renamed into place when done), so a
 * crash mid-install leaves nothing that looks installed. Uses only the npm registry through the ordinary npm client.
 */
export async function installPin(pin: NpmPin, options: InstallOptions = {}): Promise<string> {
  const prefix = pinPrefix(pin);
  if (isInstalled(pin)) return prefix;
  const cache = harnessCacheDir();
  mkdirSync(cache, { recursive: true });
  return withDirLock(join(cache, `.${pin.key}@${pin.version}.lock`), 30 * 60_000, async () => {
    if (isInstalled(pin)) return prefix;
    removeAbandonedScratch(cache, basename(prefix));
    const scratch = `${prefix}.partial-${process.pid}`;
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { recursive: true });
    writeFileSync(join(scratch, "package.json"), `${JSON.stringify({ name: `harnessrl-${pin.key}`, private: true })}\n`);
    options.log?.(`installing ${pin.package}@${pin.version} into ${prefix}`);
    const args = ["install", "--prefix", scratch, "--save-exact", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error"];
    // Scripts only where the package needs them to place its native binary; otherwise none run at all.
    args.push(pin.installScripts ? "--foreground-scripts" : "--ignore-scripts");
    args.push(`${pin.package}@${pin.version}`);
    const nodeBin = options.nodeBinDir;
    const env: NodeJS.ProcessEnv = { ...process.env, npm_config_update_notifier: "false", DISABLE_AUTOUPDATER: "1" };
    if (nodeBin) env.PATH = `${nodeBin}${delimiter}${process.env.PATH ?? ""}`;
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const r = await run(npm, args, env, scratch).catch((e: unknown) => {
      throw new InfraError("npm_unavailable", `cannot run npm to install ${pin.package}@${pin.version}: ${(e as Error).message}`, { cause: e });
    });
    if (r.code !== 0 || !existsSync(pinPackageDirIn(scratch, pin))) {
      rmSync(scratch, { recursive: true, force: true });
      throw new HarnessError("harness_install_failed", `npm install ${pin.package}@${pin.version} failed (exit ${r.code}):\n${r.output.trim()}`, { retryable: true });
    }
    if (pin.requires) {
      const file = join(pinPackageDirIn(scratch, pin), pin.requires.path);
      const size = existsSync(file) ? statSync(file).size : 0;
      if (size < pin.requires.minBytes) {
        rmSync(scratch, { recursive: true, force: true });
        throw new HarnessError("harness_install_incomplete", `${pin.package}@${pin.version}: ${pin.requires.path} is ${size} bytes after npm install; its install script did not run or failed (npm blocking install scripts?)\n${r.output.trim()}`);
      }
    }
    for (const rel of pin.executables ?? []) {
      const file = join(pinPackageDirIn(scratch, pin), rel);
      if (existsSync(file)) chmodSync(file, 0o755);
    }
    writeFileSync(join(scratch, MARKER), `${JSON.stringify({ package: pin.package, version: pin.version, installedAt: new Date().toISOString() })}\n`);
    rmSync(prefix, { recursive: true, force: true });
    renameSync(scratch, prefix);
    options.log?.(`installed ${pin.package}@${pin.version}`);
    return prefix;
  });
}

function pinPackageDirIn(prefix: string, pin: NpmPin): string {
  return join(prefix, "node_modules", ...pin.package.split("/"));
}

/** Scratch folders of installs whose process died (a crash or kill mid-install); they are never completed. */
function removeAbandonedScratch(cache: string, prefixName: string): void {
  for (const entry of readdirSync(cache)) {
    const m = /^(.*)\.partial-(\d+)$/.exec(entry);
    if (m && m[1] === prefixName && !alive(Number(m[2]))) rmSync(join(cache, entry), { recursive: true, force: true });
  }
}
