import { describe, expect, it } from "vitest";
import { runCli as cli } from "../setup/cli.js";



type Inventory = Record<string, { name: string; summary: string }[]>;

describe("harnessrl list", () => {
  it("shows every registered kind as JSON: harnesses, suites, engines, stores, sandboxes, trainers, schedulers, presets", async () => {
    const r = await cli(["list", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const inventory = JSON.parse(r.stdout) as Inventory;
    const names = (kind: string): string[] => (inventory[kind] ?? []).map((e) => e.name);
    expect(Object.keys(inventory).sort()).toEqual(["engines", "harnesses", "presets", "sandboxes", "schedulers", "stores", "suites", "trainers"]);
    expect(names("harnesses")).toEqual(expect.arrayContaining(["chat-agent", "central-agent", "claude-code", "codex", "command"]));
    expect(names("suites")).toEqual(expect.arrayContaining(["arith", "lookuprun", "mix", "dir"]));
    expect(names("engines")).toEqual(expect.arrayContaining(["scripted", "llamacpp", "vllm", "sglang", "oracle"]));
    expect(names("stores")).toEqual(["memory", "sqlite", "postgres", "postgresql"]);
    expect(names("sandboxes")).toEqual(["bwrap", "local-unsafe"]);
    expect(names("trainers")).toEqual(["torch"]);
    expect(names("schedulers")).toEqual(["round-robin", "uniform", "harness-bandit"]);
    expect(names("presets")).toContain("tiny-1m");
    for (const rows of Object.values(inventory)) for (const row of rows) expect(row.summary, row.name).not.toBe("");
  });

  it("prints one titled section per kind for people", async () => {
    const r = await cli(["list"]);
    expect(r.code, r.stderr).toBe(0);
    const titles = r.stdout.split("\n").filter((l) => /^\S.*:$/.test(l));
    expect(titles).toEqual(["Harnesses:", "Task suites:", "Engines:", "Stores:", "Sandbox backends:", "Trainers:", "Harness schedulers:", "Model presets:"]);
    expect(r.stdout).toMatch(/^ {2}harness-bandit +learnability/m);
    expect(r.stdout).toMatch(/^ {2}sqlite +SQLite file/m);
  });
});
