import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinMountSet, importSpecifiers, packageNameOf } from "../../src/harness/builtin/mount-set.js";
import { BUILTIN_NODE_FLAGS_ENV, CODE_CACHE_ENV } from "../../src/harness/builtin/definitions.js";
import { getHarness } from "../../src/harness/registry.js";
import { BwrapBackend } from "../../src/sandbox/bwrap/backend.js";
import { LIMITS, REPO_ROOT, tempRoot } from "../sandbox/helpers.js";

const BUNDLES = join(REPO_ROOT, "dist", "harness", "builtin", "bundles");
/** A launch context for the built-in harnesses (nothing listens at the proxy origin: these runs end at their environment check). */
const LAUNCH = { prompt: "p", proxyOrigin: "http://127.0.0.1:1", apiKey: "k", model: "m", workspace: "/workspace", home: "/home/sandbox", maxTurns: 1, maxTokens: 1 };

describe("built-in harness sandboxes see only the harness, never task data", () => {
  const root = tempRoot("builtin-mounts");
  // A task suite stored under a system path: /var is bound into every sandbox, its tmp must not be.
  const suiteDir = join("/var/tmp", `hrl-suite-${process.pid}`);
  let backend!: BwrapBackend;

  beforeAll(async () => {
    mkdirSync(suiteDir, { recursive: true });
    writeFileSync(join(suiteDir, "expected.json"), JSON.stringify({ answer: "139693" }));
    chmodSync(suiteDir, 0o755);
    backend = await BwrapBackend.open({ stateRoot: root.path, pool: { size: 0 } });
  });
  afterAll(async () => {
    await backend?.close();
    root.remove();
    rmSync(suiteDir, { recursive: true, force: true });
  });

  it("parses import specifiers and package names of compiled modules", () => {
    const src = 'import OpenAI from "openai";\nimport { a } from "./env.js";\nexport { b } from "../../core/errors.js";\nimport "./side.js";\nconst m = await import("zod");\nimport { spawn } from "node:child_process";';
    expect(importSpecifiers(src)).toEqual(["openai", "./env.js", "../../core/errors.js", "./side.js", "zod", "node:child_process"]);
    expect(packageNameOf("@anthropic-ai/sdk/resources/messages")).toBe("@anthropic-ai/sdk");
    expect(packageNameOf("openai/resources/chat")).toBe("openai");
    expect(packageNameOf("node:fs")).toBeNull();
  });

  it("starts every built-in harness with --liftoff-only through cached-start.cjs, and HARNESSRL_BUILTIN_NODE_FLAGS replaces the flags", () => {
    const saved = process.env[BUILTIN_NODE_FLAGS_ENV];
    const starter = join(BUNDLES, "cached-start.cjs");
    try {
      for (const name of ["chat-agent", "claw-agent", "resp-agent", "central-agent"]) {
        const bundle = join(BUNDLES, `${name}.cjs`);
        delete process.env[BUILTIN_NODE_FLAGS_ENV];
        expect(getHarness(name).launch(LAUNCH).argv).toEqual([process.execPath, "--liftoff-only", starter, bundle]);
        process.env[BUILTIN_NODE_FLAGS_ENV] = "";
        expect(getHarness(name).launch(LAUNCH).argv).toEqual([process.execPath, starter, bundle]);
        process.env[BUILTIN_NODE_FLAGS_ENV] = " --max-semi-space-size=1  --liftoff-only ";
        expect(getHarness(name).launch(LAUNCH).argv).toEqual([process.execPath, "--max-semi-space-size=1", "--liftoff-only", starter, bundle]);
      }
    } finally {
      if (saved === undefined) delete process.env[BUILTIN_NODE_FLAGS_ENV];
      else process.env[BUILTIN_NODE_FLAGS_ENV] = saved;
    }
  });

  it("mounts the harness's bundle (one file with its SDKs), the starter and the bundle's code cache: nothing else of dist/ or node_modules/", () => {
    for (const name of ["chat-agent", "claw-agent", "resp-agent", "central-agent"]) {
      expect(getHarness(name).hostPaths()).toEqual([join(BUNDLES, `${name}.cjs`), join(BUNDLES, "cached-start.cjs"), join(BUNDLES, `${name}.v8cache`)]);
    }
  });

  it("with HARNESSRL_BUILTIN_CODE_CACHE=0, starts and mounts the bundle alone (the benchmark's comparison arm)", () => {
    const saved = process.env[CODE_CACHE_ENV];
    try {
      process.env[CODE_CACHE_ENV] = "0";
      expect(getHarness("chat-agent").launch(LAUNCH).argv).toEqual([process.execPath, "--liftoff-only", join(BUNDLES, "chat-agent.cjs")]);
      expect(getHarness("chat-agent").hostPaths()).toEqual([join(BUNDLES, "chat-agent.cjs")]);
    } finally {
      if (saved === undefined) delete process.env[CODE_CACHE_ENV];
      else process.env[CODE_CACHE_ENV] = saved;
    }
  });

  it("without a bundle, mounts the entry file, what it imports and its npm packages, nothing of dist/tasks", () => {
    for (const name of ["chat-agent", "claw-agent", "resp-agent", "central-agent"]) {
      const dist = join(REPO_ROOT, "dist");
      const paths = builtinMountSet(REPO_ROOT, join(dist, "harness", "builtin", `${name}.js`));
      expect(paths).toContain(join(dist, "harness", "builtin", `${name}.js`));
      expect(paths).not.toContain(dist);
      expect(paths.filter((p) => p.startsWith(dist + "/") && !p.startsWith(join(dist, "harness", "builtin") + "/") && !p.startsWith(join(dist, "core") + "/"))).toEqual([]);
      expect(paths).not.toContain(join(REPO_ROOT, "node_modules"));
      expect(paths.some((p) => p.endsWith(name === "claw-agent" ? "node_modules/@anthropic-ai/sdk" : "node_modules/openai"))).toBe(true);
    }
  });

  it("a shell inside a built-in harness's sandbox cannot read verifiers, answers or dist/tasks, and the harness still loads", async () => {
    const def = getHarness("chat-agent");
    const s = await backend.create({ limits: LIMITS, readOnlyPaths: def.hostPaths() });
    try {
      const dist = join(REPO_ROOT, "dist");
      const script = [
        `ls ${dist}/tasks >/dev/null 2>&1 && echo SEES-DIST-TASKS || echo no-dist-tasks`,
        `cat ${dist}/tasks/programs/verifiers.js >/dev/null 2>&1 && echo READS-VERIFIERS || echo no-verifiers`,
        `cat ${dist}/tasks/families/arith.js >/dev/null 2>&1 && echo READS-GENERATOR || echo no-generator`,
        `cat ${suiteDir}/expected.json >/dev/null 2>&1 && echo READS-SUITE || echo no-suite`,
        `echo "dist: $(ls ${dist} | tr '\\n' ' ')"`,
        // The code cache is compiled code the harness process loads: nothing inside a sandbox may write it.
        `(echo x >> ${BUNDLES}/chat-agent.v8cache) 2>/dev/null && echo WROTE-CACHE || echo cache-read-only`,
        `echo "found: $(find ${REPO_ROOT} /var/tmp /tmp /opt \\( -name 'verifiers.js' -o -name 'expected.json' -o -name 'verify.cjs' -o -name 'arith.js' \\) 2>/dev/null | head -3)"`,
      ].join("\n");
      const r = await s.exec(["sh", "-c", script]);
      expect(r.stdout).toContain("no-dist-tasks");
      expect(r.stdout).toContain("no-verifiers");
      expect(r.stdout).toContain("no-generator");
      expect(r.stdout).toContain("no-suite");
      expect(r.stdout).toContain("cache-read-only");
      expect(r.stdout).toContain("dist: harness \n");
      expect(r.stdout).toContain("found: \n");
      // The harness's modules resolve: it gets as far as checking its environment (exit 2), not a missing module.
      const run = await s.exec(def.launch(LAUNCH).argv, { env: {} });
      expect(run.stderr).not.toMatch(/ERR_MODULE_NOT_FOUND|Cannot find/);
      expect(run.stderr).toContain("harness: bad environment");
      expect(run.exitCode).toBe(2);
    } finally {
      await s.destroy();
    }
  });
});
