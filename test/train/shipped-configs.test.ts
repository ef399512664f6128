import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { getHarness } from "../../src/harness/index.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { loadRunConfig } from "../../src/train/config.js";

const root = join(import.meta.dirname, "..", "..");
const shipped = [
  ...readdirSync(join(root, "configs")).filter((f) => f.endsWith(".yaml")).map((f) => join(root, "configs", f)),
  ...readdirSync(join(root, "experiments")).flatMap((d) =>
    readdirSync(join(root, "experiments", d)).filter((f) => f.endsWith(".yaml")).map((f) => join(root, "experiments", d, f)),
  ),
];

describe("the run configs shipped in configs/ and experiments/", () => {
  it("are found", () => {
    expect(shipped.length).toBeGreaterThanOrEqual(12);
  });

  it.each(shipped.map((p) => [p.slice(root.length + 1), p]))("%s validates, and its harnesses and task suites exist", async (_name, path) => {
    const config = loadRunConfig(path);
    for (const h of [...config.harnesses, ...(config.eval?.harnesses ?? [])]) expect(() => getHarness(h)).not.toThrow();
    for (const spec of [config.tasks.train, config.warm_start?.demos, config.eval?.tasks]) {
      if (spec === undefined) continue;
      expect((await loadSuite(spec)).tasks.length).toBeGreaterThan(0);
    }
  });
});
