import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isHarnessRLError } from "../../src/core/errors.js";
import { installPin, isInstalled, pinPackageDir, pinPrefix } from "../../src/harness/install/npm-install.js";
import type { NpmPin } from "../../src/harness/install/pins.js";

/** The installer against the real npm client and registry, with a tiny package in a scratch cache. */

const PIN: NpmPin = { key: "ms", package: "ms", version: "2.1.3", installScripts: false };
/** A pid that cannot belong to a live process (above Linux's pid_max ceiling). */
const DEAD_PID = 4_194_999;

let cache: string;
const saved = process.env.HARNESSRL_HARNESS_CACHE;

beforeEach(() => {
  cache = mkdtempSync(join(tmpdir(), "hrl-install-"));
  process.env.HARNESSRL_HARNESS_CACHE = cache;
});

afterEach(() => {
  if (saved === undefined) delete process.env.HARNESSRL_HARNESS_CACHE;
  else process.env.HARNESSRL_HARNESS_CACHE = saved;
  rmSync(cache, { recursive: true, force: true });
});

describe("pinned npm installs", () => {
  it("installs into its own prefix once: concurrent callers share one install, later calls do nothing", { timeout: 180_000 }, async () => {
    expect(isInstalled(PIN)).toBe(false);
    const [a, b] = await Promise.all([installPin(PIN), installPin(PIN)]);
    expect(a).toBe(pinPrefix(PIN));
    expect(b).toBe(a);
    expect(a).toBe(join(cache, "ms@2.1.3"));
    expect(isInstalled(PIN)).toBe(true);
    expect(existsSync(join(pinPackageDir(PIN), "package.json"))).toBe(true);
    // Nothing else is left in the cache: no scratch folder, no lock.
    expect(readdirSync(cache)).toEqual(["ms@2.1.3"]);
    const marker = join(a, ".harnessrl-install.json");
    const before = statSync(marker).mtimeMs;
    await installPin(PIN);
    expect(statSync(marker).mtimeMs).toBe(before);
  });

  it("breaks a dead owner's lock and removes its abandoned scratch folder", { timeout: 180_000 }, async () => {
    mkdirSync(join(cache, ".ms@2.1.3.lock"));
    writeFileSync(join(cache, ".ms@2.1.3.lock", "pid"), String(DEAD_PID));
    mkdirSync(join(cache, `ms@2.1.3.partial-${DEAD_PID}`, "node_modules"), { recursive: true });
    await installPin(PIN);
    expect(isInstalled(PIN)).toBe(true);
    expect(readdirSync(cache)).toEqual(["ms@2.1.3"]);
  });

  it("fails with an infra error naming the package when the version does not exist, leaving nothing behind", { timeout: 180_000 }, async () => {
    const bad: NpmPin = { ...PIN, version: "0.0.0-does-not-exist" };
    const err = await installPin(bad).catch((e: unknown) => e);
    expect(isHarnessRLError(err) && err.code).toBe("harness_install_failed");
    expect(String((err as Error).message)).toContain("ms@0.0.0-does-not-exist");
    expect(isInstalled(bad)).toBe(false);
    expect(readdirSync(cache)).toEqual([]);
  });
});

describe("pinned installs that need their install script", () => {
  it("refuses to call Claude Code installed when its install script did not place the native binary", { timeout: 300_000 }, async () => {
    const { PINS } = await import("../../src/harness/install/pins.js");
    const noScripts: NpmPin = { ...PINS["claude-code"], key: "claude-code-noscripts", installScripts: false };
    const err = await installPin(noScripts).catch((e: unknown) => e);
    expect(isHarnessRLError(err) && err.code).toBe("harness_install_incomplete");
    expect(String((err as Error).message)).toContain("bin/claude.exe");
    expect(isInstalled(noScripts)).toBe(false);
    expect(readdirSync(cache)).toEqual([]);
  });
});
