import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { UserError } from "../../src/core/errors.js";
import { buildRunContext } from "../../src/run/context.js";
import { loadRunConfigSource } from "../../src/train/config.js";
import { parseOverride } from "../../src/train/config-overrides.js";

const QUICKSTART = "configs/quickstart.yaml";
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), "hrl-overrides-"));
  dirs.push(d);
  return d;
};

const sets = (...args: string[]): ReturnType<typeof parseOverride>[] => args.map(parseOverride);

function userError(f: () => unknown): UserError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(UserError);
    return e as UserError;
  }
  throw new Error("expected a UserError");
}

describe("--set: one config value changed on the command line", () => {
  it("a seed sweep from the shipped file: the values change, everything else and the file's comments stay", () => {
    const plain = loadRunConfigSource(QUICKSTART);
    const { config, text } = loadRunConfigSource(QUICKSTART, sets("seed=3", "model.seed=3", "budget.steps=30"));
    expect(config.seed).toBe(3);
    expect(config.model).toMatchObject({ seed: 3 });
    expect(config.budget.steps).toBe(30);
    expect({ ...config, seed: plain.config.seed, model: plain.config.model, budget: plain.config.budget }).toEqual(plain.config);
    // The text is the file with the values set: its comments are still there, and it loads to the same config.
    const comments = plain.text.split("\n").filter((l) => l.trimStart().startsWith("#"));
    expect(comments.length).toBeGreaterThan(3);
    for (const c of comments) expect(text).toContain(c.trim());
    expect(loadRunConfigSource(writeTemp(text)).config).toEqual(config);
  });

  it("values are YAML: numbers, booleans, lists (whole or by index), flow mappings and strings with colons", () => {
    const { config } = loadRunConfigSource(QUICKSTART, sets("harnesses=[chat-agent]", "eval.after=false", "eval.tasks=calcrun:test?n=8&seed=3", "sampling={temperature: 0.7, max_tokens: 64}"));
    expect(config.harnesses).toEqual(["chat-agent"]);
    expect(config.eval).toMatchObject({ after: false, tasks: "calcrun:test?n=8&seed=3" });
    expect(config.sampling).toMatchObject({ temperature: 0.7, max_tokens: 64 });
    const byIndex = loadRunConfigSource(QUICKSTART, sets("harnesses.1=chat-agent")).config;
    expect(byIndex.harnesses[1]).toBe("chat-agent");
  });

  it("null removes a key, so an optional setting goes back to its default", () => {
    const file = writeTemp(readFileSync(QUICKSTART, "utf8").replace(/^budget: \{/m, "budget: { max_minutes: 5,"));
    expect(loadRunConfigSource(file).config.budget.max_minutes).toBe(5);
    expect(loadRunConfigSource(file, sets("budget.max_minutes=null")).config.budget.max_minutes).toBeUndefined();
  });

  it("a misspelt key fails the config's validation, naming the key and the --set that made it", () => {
    const e = userError(() => loadRunConfigSource(QUICKSTART, sets("budget.stpes=30")));
    expect(e.code).toBe("invalid_config");
    expect(e.message).toContain("with --set budget.stpes=30");
    expect(e.message).toContain("stpes");
    expect(userError(() => loadRunConfigSource(QUICKSTART, sets("budget.steps=many"))).message).toContain("budget.steps");
  });

  it("a path through a value that is not a mapping, or past a list's end, is refused before anything is validated", () => {
    expect(userError(() => loadRunConfigSource(QUICKSTART, sets("name.first=x"))).message).toContain("name is not a mapping");
    expect(userError(() => loadRunConfigSource(QUICKSTART, sets("budget.0=x"))).message).toContain("budget is not a list");
    expect(userError(() => loadRunConfigSource(QUICKSTART, sets("harnesses.7=pi"))).message).toContain("index 7 is past the end of harnesses (2 items)");
  });

  it("malformed arguments are usage errors", () => {
    for (const arg of ["budget.steps", "=3", "budget..steps=3", ".steps=3", "budget.steps =3", "a b=1", "x=[unclosed"]) {
      expect(userError(() => parseOverride(arg)).code, arg).toBe("invalid_arguments");
    }
    expect(parseOverride("budget.steps=")).toMatchObject({ path: ["budget", "steps"], value: "" });
    expect(parseOverride("harnesses.0=pi")).toMatchObject({ path: ["harnesses", 0], value: "pi" });
    expect(parseOverride("eval.tasks=a=b")).toMatchObject({ value: "a=b" });
  });

  it("the run directory keeps the config as given; resuming without the --set is a config change that says what changed", () => {
    const runDir = join(tempDir(), "run");
    const given = loadRunConfigSource(QUICKSTART, sets("budget.steps=30"));
    buildRunContext(given.config, { runDir, configPath: QUICKSTART, configText: given.text });
    expect(parseYaml(readFileSync(join(runDir, "config.yaml"), "utf8"))).toMatchObject({ budget: { steps: 30 } });
    // The same command again: nothing changed.
    const again = loadRunConfigSource(QUICKSTART, sets("budget.steps=30"));
    expect(buildRunContext(again.config, { runDir, configPath: QUICKSTART, configText: again.text }).configChange).toBeUndefined();
    // Without it: the file's value is a change, and the given config is kept beside it.
    const plain = loadRunConfigSource(QUICKSTART);
    const ctx = buildRunContext(plain.config, { runDir, configPath: QUICKSTART, configText: plain.text });
    expect(ctx.configChange?.changes).toEqual([`budget.steps: 30 → ${plain.config.budget.steps}`]);
    expect(existsSync(join(runDir, "config.1.yaml"))).toBe(true);
  });
});

function writeTemp(text: string): string {
  const path = join(tempDir(), "config.yaml");
  writeFileSync(path, text);
  return path;
}
