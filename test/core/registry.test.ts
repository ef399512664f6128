import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { registerBuiltins } from "../../src/builtins.js";
import { UserError } from "../../src/core/errors.js";
import { parseSpec, Registry } from "../../src/core/registry.js";
import { createEngine, listEngines } from "../../src/engine/index.js";
import { listHarnesses } from "../../src/harness/index.js";
import { listSandboxBackends } from "../../src/sandbox/index.js";
import { listSchedulers } from "../../src/schedule/index.js";
import { listStores, openStore, sqliteFileOf } from "../../src/store/registry.js";
import { listSuites, loadSuite } from "../../src/tasks/registry.js";
import { createTrainer, listTrainers } from "../../src/trainer/index.js";

interface Thing {
  name: string;
  summary: string;
  n: number;
}

function caught(f: () => unknown): UserError {
  try {
    f();
  } catch (e) {
    if (e instanceof UserError) return e;
    throw e;
  }
  throw new Error("expected a UserError");
}

describe("the generic registry", () => {
  it("rejects a second entry under a taken name and keeps the first", () => {
    const things = new Registry<Thing>("thing", "unknown_harness");
    things.register({ name: "a", summary: "first", n: 1 });
    const e = caught(() => things.register({ name: "a", summary: "second", n: 2 }));
    expect(e.code).toBe("duplicate_registration");
    expect(e.message).toContain('thing "a" is already registered');
    expect(things.get("a").n).toBe(1);
    expect(things.values()).toHaveLength(1);
  });

  it("rejects names a spec could not address (empty, with a colon, a question mark or whitespace)", () => {
    const things = new Registry<Thing>("thing", "unknown_harness");
    for (const name of ["", "a:b", "a?b", "a b"]) expect(caught(() => things.register({ name, summary: "", n: 0 })).code).toBe("invalid_registration");
    expect(things.values()).toEqual([]);
  });

  it("names the kind, the unknown name, where it came from and the known names (sorted) on a failed lookup", () => {
    const things = new Registry<Thing>("thing", "unknown_harness");
    things.register({ name: "zeta", summary: "", n: 0 });
    things.register({ name: "alpha", summary: "", n: 0 });
    const e = caught(() => things.get("beta", 'spec "beta:x"'));
    expect(e.code).toBe("unknown_harness");
    expect(e.message).toBe('unknown thing "beta" in spec "beta:x" (known: alpha, zeta)');
    expect(things.find("beta")).toBeUndefined();
  });

  it("says registerBuiltins() was never called when a lookup finds the registry empty", () => {
    const e = caught(() => new Registry<Thing>("thing", "unknown_harness").get("a"));
    expect(e.message).toContain("no thing is registered: call registerBuiltins()");
  });

  it("lists entries in registration order with their summaries", () => {
    const things = new Registry<Thing>("thing", "unknown_harness");
    things.register({ name: "b", summary: "bee", n: 0 });
    things.register({ name: "a", summary: "ay", n: 0 });
    expect(things.list()).toEqual([
      { name: "b", summary: "bee" },
      { name: "a", summary: "ay" },
    ]);
    expect(things.names()).toEqual(["a", "b"]);
  });
});

describe("parseSpec", () => {
  it("splits at the first colon only, so URLs, devices and paths keep theirs", () => {
    expect(parseSpec("oracle")).toEqual({ scheme: "oracle", arg: "" });
    expect(parseSpec("vllm:http://gpu-1:8000/v1?model_dir=/m&timeout_ms=5")).toEqual({ scheme: "vllm", arg: "http://gpu-1:8000/v1?model_dir=/m&timeout_ms=5" });
    expect(parseSpec("torch:cuda:1")).toEqual({ scheme: "torch", arg: "cuda:1" });
    expect(parseSpec("dir:/data/a:b/suite")).toEqual({ scheme: "dir", arg: "/data/a:b/suite" });
    expect(parseSpec("bench-engine:")).toEqual({ scheme: "bench-engine", arg: "" });
    expect(parseSpec("  memory \n")).toEqual({ scheme: "memory", arg: "" });
    expect(parseSpec(":x")).toEqual({ scheme: "", arg: "x" });
  });

  it("hands the sqlite store a file path that contains a colon, unsplit", () => {
    const dir = mkdtempSync(join(tmpdir(), "hrl-spec-"));
    try {
      openStore(`sqlite:${join(dir, "a:b.sqlite")}`).close();
      expect(existsSync(join(dir, "a:b.sqlite"))).toBe(true);
      // A bare path with a colon is no scheme either: it falls through to the sqlite file it names.
      openStore(join(dir, "c:d.db")).close();
      expect(existsSync(join(dir, "c:d.db"))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("finds the SQLite file a store spec names, whichever of the three spellings it uses", () => {
    expect(sqliteFileOf("sqlite:/runs/a:b/calls.sqlite")).toBe("/runs/a:b/calls.sqlite");
    expect(sqliteFileOf("runs/x/records.db")).toBe("runs/x/records.db");
    expect(sqliteFileOf(" runs/x/records.sqlite3 ")).toBe("runs/x/records.sqlite3");
    expect(sqliteFileOf("memory")).toBeNull();
    expect(sqliteFileOf("sqlite:")).toBeNull();
  });
});

describe("the built-in registries", () => {
  it("hold every kind after registerBuiltins(), which is idempotent", () => {
    registerBuiltins(); // the vitest setup file already called it: a second call must not throw duplicates
    expect(listEngines().map((e) => e.name)).toEqual(expect.arrayContaining(["scripted", "llamacpp", "vllm", "sglang", "oracle"]));
    expect(listStores().map((s) => s.name)).toEqual(["memory", "sqlite", "postgres", "postgresql"]);
    expect(listSandboxBackends().map((s) => s.name)).toEqual(["bwrap", "local-unsafe"]);
    expect(listTrainers().map((t) => t.name)).toEqual(["torch"]);
    expect(listSchedulers().map((s) => s.name)).toEqual(["round-robin", "uniform", "harness-bandit"]);
    expect(listHarnesses().map((h) => h.name)).toEqual(expect.arrayContaining(["chat-agent", "claw-agent", "resp-agent", "central-agent", "claude-code", "command"]));
    expect(listSuites().map((s) => s.name)).toEqual(["arith", "calcfile", "calcrun", "files", "lookup", "lookuprun", "mix", "dir"]);
  });

  it("report an unknown scheme in a spec with the spec and the known names", async () => {
    await expect(createEngine("vlm:http://x:1")).rejects.toThrow(/^unknown engine "vlm" in engine spec "vlm:http:\/\/x:1" \(known: llamacpp, llamacpp-http, oracle, scripted, sglang, vllm\)$/);
    await expect(createTrainer("jax:tpu")).rejects.toMatchObject({ code: "unknown_trainer", message: expect.stringContaining("(known: torch)") as unknown });
    await expect(loadSuite("arithh:test")).rejects.toMatchObject({ code: "unknown_suite" });
  });
});
