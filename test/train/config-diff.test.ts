import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { buildRunContext } from "../../src/run/context.js";
import { loadRunConfig } from "../../src/train/config.js";
import { configChanges } from "../../src/train/config-diff.js";

const root = mkdtempSync(join(tmpdir(), "hrl-configdiff-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const base = { name: "diff", model: { preset: "tiny-1m" }, harnesses: ["chat-agent"], tasks: { train: "calcrun:train?n=2" }, budget: { steps: 4, tasks_per_step: 2, samples: 2 } };

describe("a run resumed with another config says where it differs and keeps the previous one", () => {
  it("lists changed, added and removed leaves by dotted path; arrays compare whole; equal configs give nothing", () => {
    expect(configChanges({ a: { b: 1, c: [1, 2] }, d: "x" }, { a: { b: 2, c: [1, 2] }, d: "x" })).toEqual(["a.b: 1 → 2"]);
    expect(configChanges({ a: [1, 2] }, { a: [2, 1] })).toEqual(["a: [1,2] → [2,1]"]);
    expect(configChanges({ a: 1 }, { a: 1, e: { f: true } })).toEqual(["e: (unset) → {\"f\":true}"]);
    expect(configChanges({ a: 1, z: 2 }, { a: 1 })).toEqual(["z: 2 → (unset)"]);
    expect(configChanges({ s: "x".repeat(100) }, { s: "y" })[0]).toMatch(/^s: "x{56}\.\.\. → "y"$/);
    expect(configChanges({ a: { b: [1] } }, { a: { b: [1] } })).toEqual([]);
  });

  it("the first start copies the config; a resume with the same values (other comments) changes nothing; other values move the old copy to config.1.yaml", () => {
    const runDir = join(root, "run");
    const first = join(root, "first.yaml");
    writeFileSync(first, stringify(base));
    expect(buildRunContext(loadRunConfig(first), { runDir, configPath: first }).configChange).toBeUndefined();
    expect(readFileSync(join(runDir, "config.yaml"), "utf8")).toBe(readFileSync(first, "utf8"));

    const commented = join(root, "commented.yaml");
    writeFileSync(commented, `# the same run, reformatted\n${stringify(base, { indent: 4 })}`);
    expect(buildRunContext(loadRunConfig(commented), { runDir, configPath: commented }).configChange).toBeUndefined();
    expect(existsSync(join(runDir, "config.1.yaml"))).toBe(false);

    const longer = join(root, "longer.yaml");
    writeFileSync(longer, stringify({ ...base, budget: { ...base.budget, steps: 30 }, algorithm: { lr: 0.002 } }));
    const change = buildRunContext(loadRunConfig(longer), { runDir, configPath: longer }).configChange;
    expect(change?.changes).toEqual(["algorithm.lr: 0.001 → 0.002", "budget.steps: 4 → 30"]);
    expect(change?.previous).toBe(join(runDir, "config.1.yaml"));
    expect(readFileSync(join(runDir, "config.1.yaml"), "utf8")).toBe(readFileSync(first, "utf8"));
    expect(readFileSync(join(runDir, "config.yaml"), "utf8")).toBe(readFileSync(longer, "utf8"));

    // A second change keeps both earlier configs.
    writeFileSync(first, stringify(base));
    expect(buildRunContext(loadRunConfig(first), { runDir, configPath: first }).configChange?.previous).toBe(join(runDir, "config.2.yaml"));
  });
});
