import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkRunConfigNames } from "../../src/run/check-names.js";
import { buildRunContext } from "../../src/run/context.js";
import { loadRunConfig, parseRunConfig } from "../../src/train/config.js";

describe("a run config that names things that do not exist", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-config-names-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const base = { model: { preset: "tiny-1m" }, harnesses: ["chat-agent"], tasks: { train: "calcrun:train" } };

  it("passes for every name the shipped quickstart uses", () => {
    expect(() => checkRunConfigNames(loadRunConfig("configs/quickstart.yaml"))).not.toThrow();
  });

  it("fails with one line per unknown name, at its path, listing what exists", () => {
    const config = parseRunConfig({
      ...base,
      harnesses: ["chat-agent", "chat-agnet"],
      tasks: { train: "calcrum:train" },
      warm_start: { demos: "calcrun:train?n=2" },
      rollout: { sandbox: "docker" },
      eval: { tasks: "calcrun:test", harnesses: ["claude-kode"] },
    });
    let message = "";
    try {
      checkRunConfigNames(config, "typos.yaml");
    } catch (e) {
      expect(e).toMatchObject({ code: "invalid_config", fault: "user" });
      message = (e as Error).message;
    }
    const lines = message.split("\n");
    expect(lines[0]).toBe("typos.yaml names things that do not exist:");
    expect(lines.slice(1).map((l) => l.trim().split(":")[0])).toEqual(["harnesses.1", "eval.harnesses.0", "tasks.train", "rollout.sandbox"]);
    expect(message).toMatch(/unknown harness "chat-agnet" \(known: .*chat-agent/);
    expect(message).toMatch(/unknown sandbox backend "docker" \(known: .*bwrap/);
  });

  it("is checked by buildRunContext before the run directory is created", () => {
    const runDir = join(root, "never");
    const config = parseRunConfig({ ...base, harnesses: ["no-such-harness"] });
    expect(() => buildRunContext(config, { runDir })).toThrow(/harnesses\.0: unknown harness "no-such-harness"/);
    expect(existsSync(runDir)).toBe(false);
  });
});
