import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadSuiteDir } from "../../src/tasks/load.js";
import { runCli as cli } from "../setup/cli.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const FIXTURES = join(ROOT, "test", "tasks", "fixtures", "clawgym");


describe("harnessrl tasks", () => {
  it("lists the suites as JSON", async () => {
    const r = await cli(["tasks", "list", "--json"]);
    expect(r.code).toBe(0);
    const names = (JSON.parse(r.stdout) as { name: string }[]).map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(["arith", "files", "lookup", "mix", "dir"]));
  });

  it("shows tasks one per line and exports them to a folder that loads back", async () => {
    const show = await cli(["tasks", "show", "lookup:test?n=3&seed=4"]);
    expect(show.code).toBe(0);
    expect(show.stdout.trim().split("\n").map((l) => l.split("\t")[0])).toEqual(["lookup-test-s4-0000", "lookup-test-s4-0001", "lookup-test-s4-0002"]);
    const out = await mkdtemp(join(tmpdir(), "hrl-export-"));
    try {
      const exp = await cli(["tasks", "export", "arith:train?n=4", "--out", out]);
      expect(exp).toMatchObject({ code: 0, stdout: `wrote 4 tasks to ${out}\n` });
      expect((await loadSuiteDir(out)).map((t) => t.id)).toHaveLength(4);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });

  it("checks a generated suite (oracle 1, do-nothing 0) and a ClawGym folder (no oracle)", async () => {
    const mix = await cli(["tasks", "check", "mix:test?n=6&seed=8"]);
    expect(mix.stdout).toContain("6 tasks; oracle mean 1.000; do-nothing mean 0.000");
    expect(mix.code).toBe(0);
    const claw = await cli(["tasks", "check", `dir:${FIXTURES}`, "--json"]);
    expect(claw.code).toBe(0);
    expect(JSON.parse(claw.stdout)).toMatchObject({ tasks: 2, oracleMean: null, emptyMean: 0, problems: [] });
  });

  it("rejects a bad spec with a user error and exit code 2", async () => {
    const r = await cli(["tasks", "show", "arith:dev"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown split "dev".*\[invalid_suite_spec\]/);
  });
});
