import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { describe, expect, it } from "vitest";
import { getHarness } from "../../src/harness/index.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { schemaKeysAt } from "../../src/train/config-issues.js";
import { loadRunConfig, parseRunConfig, runConfigSchema } from "../../src/train/config.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

const root = join(import.meta.dirname, "..", "..");
const shipped = [
  ...readdirSync(join(root, "configs")).filter((f) => f.endsWith(".yaml")).map((f) => join(root, "configs", f)),
  ...readdirSync(join(root, "experiments")).flatMap((d) =>
    readdirSync(join(root, "experiments", d)).filter((f) => f.endsWith(".yaml")).map((f) => join(root, "experiments", d, f)),
  ),
];
/** Test configs: together with the shipped ones they must set every section of the schema. */
const fixtures = [join(import.meta.dirname, "fixtures", "every-section.yaml")];
const all = [...shipped, ...fixtures];
const rel = (p: string): string => p.slice(root.length + 1);
const raw = new Map(all.map((p) => [p, parseYaml(readFileSync(p, "utf8")) as Record<string, unknown>]));

type Path = string[];
/** Every object section of the run-config schema (the root included), as key paths, from the schema itself. */
function schemaSections(path: Path = []): Path[] {
  const keys = schemaKeysAt(runConfigSchema, path);
  return [path, ...keys.filter((k) => schemaKeysAt(runConfigSchema, [...path, k]).length > 0).flatMap((k) => schemaSections([...path, k]))];
}
const sections = schemaSections();

function at(value: unknown, path: Path): unknown {
  return path.reduce<unknown>((v, k) => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>)[k] : undefined), value);
}
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
/** The first config (shipped before test fixtures) that sets the section at `path`. */
const configWith = (path: Path): string | undefined => all.find((p) => isObject(at(raw.get(p), path)));

describe("the run configs shipped in configs/ and experiments/", () => {
  it("are found", () => {
    expect(shipped.length).toBeGreaterThanOrEqual(12);
  });

  it.each(all.map((p) => [rel(p), p]))("%s validates, and its harnesses and task suites exist", async (_name, path) => {
    const config = loadRunConfig(path);
    for (const h of [...config.harnesses, ...(config.eval?.harnesses ?? [])]) expect(() => getHarness(h)).not.toThrow();
    for (const spec of [config.tasks.train, config.warm_start?.demos, config.eval?.tasks]) {
      if (spec === undefined) continue;
      expect((await loadSuite(spec)).tasks.length).toBeGreaterThan(0);
    }
  });

  it("together with the test configs, set every top-level key and every section of the schema", () => {
    const topLevel = schemaKeysAt(runConfigSchema, []);
    expect(topLevel).toEqual(expect.arrayContaining(["advantage", "scheduler", "algorithm", "capo", "eval", "warm_start"]));
    expect(topLevel.filter((k) => ![...raw.values()].some((c) => k in c))).toEqual([]);
    expect(sections.length).toBeGreaterThan(topLevel.length / 2);
    expect(sections.filter((s) => !configWith(s)).map((s) => s.join("."))).toEqual([]);
  });

  it("the PPO quickstart is the quickstart with a critic: every setting but the estimator's and the critic's is quickstart.yaml's", () => {
    // So a seed's warm start is bit for bit the GRPO run's and the two estimators compare paired (docs/training.md).
    const grpo = loadRunConfig(join(root, "configs", "quickstart.yaml"));
    const ppo = loadRunConfig(join(root, "configs", "quickstart-ppo.yaml"));
    expect(ppo.advantage.estimator).toBe("ppo");
    const common = (c: typeof grpo): unknown => ({
      ...c,
      name: null,
      advantage: { ...c.advantage, estimator: null, ppo: null },
      algorithm: { ...c.algorithm, critic_lr: null, critic_max_grad_norm: null },
    });
    expect(common(ppo)).toEqual(common(grpo));
  });

  it("hold no object the schema does not type key by key (no opaque records left to parse later)", () => {
    const opaque: string[] = [];
    const walk = (value: Record<string, unknown>, path: Path): void => {
      if (schemaKeysAt(runConfigSchema, path, value).length === 0) opaque.push(path.join("."));
      for (const [k, v] of Object.entries(value)) if (isObject(v)) walk(v, [...path, k]);
    };
    for (const c of raw.values()) walk(c, []);
    expect(opaque).toEqual([]);
  });
});

describe("a typo in any section of the run config", () => {
  // One case per section of the schema (generated from its keys): a misspelt key is an error at its own dotted path.
  it.each(sections.map((s) => [s.length ? s.join(".") : "(root)", s] as const))("%s: the misspelt key fails with its path", (_name, path) => {
    const source = configWith(path);
    if (!source) throw new Error(`no config sets ${path.join(".")}`);
    const config = structuredClone(raw.get(source)) as Record<string, unknown>;
    const section = path.length ? (at(config, path) as Record<string, unknown>) : config;
    const key = schemaKeysAt(runConfigSchema, path, config).find((k) => k.length >= 4);
    if (!key) throw new Error(`section ${path.join(".")} has no key to misspell`);
    const typo = `${key.slice(0, -1)}${key.at(-1) === "x" ? "y" : "x"}`;
    section[typo] = section[key] ?? 1;
    const started = performance.now();
    let message = "";
    try {
      parseRunConfig(config, rel(source));
    } catch (e) {
      message = (e as Error).message;
    }
    expect(performance.now() - started).toBeLessThan(1000);
    expect(message.split("\n")).toContain(`  ${[...path, typo].join(".")}: unknown key (did you mean ${key}?)`);
  });

  it("keys that moved sections name their new home (algorithm.name → advantage.estimator)", () => {
    const base = raw.get(join(root, "configs", "quickstart.yaml")) ?? {};
    expect(() => parseRunConfig({ ...base, algorithm: { name: "grpo", std_normalize: false, loss_agg: "token-mean" } })).toThrow(
      /algorithm\.name: unknown key \(now advantage\.estimator\)\n {2}algorithm\.std_normalize: unknown key \(now advantage\.normalize_std\)\n {2}algorithm\.loss_agg: unknown key \(now advantage\.aggregation\)/,
    );
    expect(() => parseRunConfig({ ...base, advantage: { negativeScale: 0 } })).toThrow(/advantage\.negativeScale: unknown key \(did you mean negative_scale\?\)/);
  });

  it("a key of another scheduler is named as unknown for this one, with this one's keys", () => {
    const base = raw.get(join(root, "experiments", "harness-mix", "round-robin.yaml")) ?? {};
    expect(() => parseRunConfig({ ...base, scheduler: { name: "round-robin", window: 4 } })).toThrow(/scheduler\.window: unknown key \(known: name\)/);
  });

  it("bad values and cross-field rules also fail before anything runs, one line each", () => {
    const base = raw.get(join(root, "configs", "quickstart.yaml")) ?? {};
    const lines = (value: unknown): string[] => {
      try {
        parseRunConfig(value);
      } catch (e) {
        return (e as Error).message.split("\n").slice(1);
      }
      return [];
    };
    expect(lines({ ...base, advantage: { estimator: "reinforce", group_by: ["taskId"] } })).toEqual([expect.stringMatching(/^ {2}advantage\.estimator: /), expect.stringMatching(/^ {2}advantage\.group_by\.0: /)]);
    expect(lines({ ...base, advantage: { process: { subscore: "hits", decisions: "tool" } } })).toEqual([expect.stringMatching(/^ {2}advantage\.process\.tool: /)]);
    // model is preset | dir | checkpoint: a union none of whose options matches is explained by the closest one.
    expect(lines({ ...base, model: { presett: "tiny-1m" } })).toEqual(["  model.preset: Invalid input: expected string, received undefined", "  model.presett: unknown key (did you mean preset?)"]);
    expect(lines({ ...base, model: { preset: "tiny-1m", dir: "models/x" } })).toEqual(["  model.dir: unknown key (not with the other keys given here)"]);
    expect(lines({ ...base, mix: "scheduled" })).toEqual([expect.stringMatching(/^ {2}scheduler: mix: scheduled needs a scheduler section/)]);
    expect(lines({ ...base, scheduler: { name: "round-robin" } })).toEqual([expect.stringMatching(/^ {2}scheduler: a scheduler is only used with mix: scheduled/)]);
    expect(lines({ ...base, mix: "scheduled", scheduler: { name: "harness-bandit", p_min: 0.6 } })).toEqual([expect.stringMatching(/^ {2}scheduler\.p_min: 0\.6 is infeasible for 2 harnesses/)]);
    expect(lines({ ...base, mix: "scheduled", scheduler: { name: "harness-bandit", p_min: 0.5 } })).toEqual([]);
    const ws = (base as { warm_start: Record<string, unknown> }).warm_start;
    expect(lines({ ...base, warm_start: { ...ws, epochs: 12, max_epochs: 8 } })).toEqual(["  warm_start.max_epochs: max_epochs 8 is below epochs 12"]);
    expect(lines({ ...base, warm_start: { ...ws, stop_at_nll: undefined, stop_at_demo_prob: undefined, stop_at_pass_rate: undefined, max_epochs: 30 } })).toEqual([expect.stringMatching(/^ {2}warm_start\.max_epochs: max_epochs extends SFT until a target is reached/)]);
    // The stop's held-in tasks must not be the held-out evaluation's.
    const evalTasks = (base as { eval: { tasks: string } }).eval.tasks;
    expect(lines({ ...base, warm_start: { ...ws, stop_at_pass_rate: { target: 0.35, tasks: evalTasks } } })).toEqual([expect.stringMatching(/^ {2}warm_start\.stop_at_pass_rate\.tasks: the held-out evaluation's tasks would decide/)]);
    expect(lines({ ...base, warm_start: { ...ws, epochs: 12, max_epochs: 30 } })).toEqual([]);
  });
});

describe("harnessrl train --check (and quickstart --check)", () => {
  const cli = (...args: string[]): ReturnType<typeof spawnSync> => spawnSync(process.execPath, [join(root, "dist", "cli", "main.js"), ...args], { cwd: root, encoding: "utf8" });

  it("prints one OK line for a valid config, naming its time caps, and runs nothing", () => {
    const r = cli("train", "--config", "configs/real-pi.yaml", "--check");
    expect(r.status).toBe(0);
    expect(String(r.stdout).trim().split("\n")).toEqual([`OK configs/real-pi.yaml: run "real-pi", warm start + 16 grpo steps through pi (mix: mixed); time caps: warm start 1200 s, RL 90 min`]);
    const ppo = cli("train", "--config", "configs/quickstart-ppo.yaml", "--check");
    expect(String(ppo.stdout).trim()).toBe(`OK configs/quickstart-ppo.yaml: run "quickstart-ppo", warm start + 14 ppo steps through chat-agent, resp-agent (mix: mixed)`);
  });

  it("quickstart --check validates the packaged quickstart config the same way", () => {
    const r = cli("quickstart", "--check");
    expect(r.status).toBe(0);
    expect(String(r.stdout).trim()).toBe(`OK ${join(root, "configs", "quickstart.yaml")}: run "quickstart", warm start + 14 grpo steps through chat-agent, resp-agent (mix: mixed)`);
  });

  it("--set changes values for the check as for a run (repeatable, YAML values, null back to the default); a bad --set is a usage error", () => {
    const r = cli("train", "--config", "configs/real-pi.yaml", "--set", "budget.steps=30", "--set", "budget.max_minutes=null", "--set", "harnesses=[chat-agent]", "--check");
    expect(r.status).toBe(0);
    expect(String(r.stdout).trim()).toBe(`OK configs/real-pi.yaml: run "real-pi", warm start + 30 grpo steps through chat-agent (mix: mixed); time caps: warm start 1200 s`);
    const q = cli("quickstart", "--set", "seed=7", "--set", "budget.stpes=3", "--check");
    expect(q.status).toBe(2);
    expect(String(q.stderr)).toContain("with --set seed=7 --set budget.stpes=3 is not a valid run config:\n  budget.stpes: unknown key (did you mean steps?)");
    const bad = cli("train", "--config", "configs/quickstart-ppo.yaml", "--set", "budget", "--check");
    expect(bad.status).toBe(2);
    expect(String(bad.stderr)).toContain("[invalid_arguments]");
  });

  it("prints every error with its path and exits 2", () => {
    const dir = tempDir("harnessrl-check-");
    const path = join(dir, "typo.yaml");
    writeFileSync(path, readFileSync(join(root, "configs", "quickstart.yaml"), "utf8").replace("kl_coef:", "kl_cof:").replace("{ steps: 14,", "{ step: 14,"));
    const r = cli("train", "--config", path, "--check");
    expect(r.status).toBe(2);
    expect(String(r.stderr)).toMatch(/\n {2}algorithm\.kl_cof: unknown key \(did you mean kl_coef\?\)\n {2}budget\.step: unknown key \(did you mean steps\?\)/);
    expect(r.stdout).toBe("");
  });
});
