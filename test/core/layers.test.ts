import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";
import { ALLOWANCES, LAYERS } from "../../scripts/layers.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Top-level entries of src/: folders by name, files by name without `.ts`. */
function srcEntries(): string[] {
  return readdirSync(join(root, "src"), { withFileTypes: true })
    .filter((e) => e.isDirectory() || e.name.endsWith(".ts"))
    .map((e) => (e.isDirectory() ? e.name : e.name.replace(/\.ts$/, "")));
}

/** Rows of the Folders table in docs/architecture.md that name a src/ entry: name → [layer, uses]. */
function docRows(): Map<string, { layer: string; uses: string[] }> {
  const doc = readFileSync(join(root, "docs", "architecture.md"), "utf8");
  const section = doc.slice(doc.indexOf("## Folders"), doc.indexOf("## Layer map"));
  const rows = new Map<string, { layer: string; uses: string[] }>();
  for (const line of section.split("\n")) {
    const [, folder = "", layer = "", uses = ""] = line.split("|").map((c) => c.trim());
    const name = /^`src\/([\w-]+?)(?:\.ts)?`$/.exec(folder)?.[1];
    if (name) rows.set(name, { layer, uses: uses.split(",").map((u) => u.trim()).filter((u) => u.length > 0) });
  }
  return rows;
}

describe("layer table (scripts/layers.mjs)", () => {
  it("lists every folder and top-level file under src/", () => {
    const missing = srcEntries().filter((e) => !(e in LAYERS));
    expect(missing).toEqual([]);
  });

  it("only lets a folder use same-layer entries that exist in the table", () => {
    for (const [name, entry] of Object.entries(LAYERS)) {
      for (const u of entry.uses ?? []) expect({ name, uses: u, layer: LAYERS[u]?.layer }).toEqual({ name, uses: u, layer: entry.layer });
    }
    for (const a of ALLOWANCES) expect(a.why.length, `allowance for ${a.folder} states its reason`).toBeGreaterThan(20);
  });

  it("matches the Folders table in docs/architecture.md row for row", () => {
    const rows = docRows();
    expect([...rows.keys()].sort()).toEqual(Object.keys(LAYERS).sort());
    for (const [name, entry] of Object.entries(LAYERS)) {
      expect({ name, ...rows.get(name) }).toEqual({ name, layer: String(entry.layer), uses: entry.uses ?? [] });
    }
  });
});

describe("lint enforces the layer map", () => {
  const eslint = new ESLint({ cwd: root });

  /** no-restricted-imports messages for `source` imported from a (virtual) file at `filePath`. */
  async function violations(filePath: string, source: string): Promise<string[]> {
    const code = `import type { X } from "${source}";\nexport type Y = X;\n`;
    const [result] = await eslint.lintText(code, { filePath: join(root, filePath) });
    return (result?.messages ?? []).filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
  }

  it("rejects imports of higher layers and of same-layer folders a row does not list, at any depth", async () => {
    // The inversions issue 17 removed: llama.cpp consistency (engine → trainer/batch), ICR vocabulary in the store.
    expect(await violations("src/engine/llamacpp/check.ts", "../../trainer/types.js")).toHaveLength(1);
    expect(await violations("src/engine/llamacpp/check.ts", "../../batch/types.js")).toHaveLength(1);
    expect(await violations("src/icr/records.ts", "../store/types.js")).toHaveLength(1);
    expect(await violations("src/icr/records.ts", "../engine/types.js")).toHaveLength(1);
    // A library folder importing the CLI, a lower layer importing the rollout stack, same layer without `uses`.
    expect(await violations("src/tasks/command.ts", "../cli/command.js")).toHaveLength(1);
    expect(await violations("src/eval/metrics.ts", "../rollout/runner.js")).toHaveLength(1);
    expect(await violations("src/batch/build.ts", "../trainer/types.js")).toHaveLength(1);
    expect(await violations("src/core/x.ts", "../builtins.js")).toHaveLength(1);
    const [message] = await violations("src/store/x.ts", "../trees/types.js");
    expect(message).toContain("src/store is layer 5");
  });

  it("accepts lower layers, listed same-layer folders and paths that stay inside the folder", async () => {
    expect(await violations("src/trainer/types.ts", "../batch/types.js")).toEqual([]);
    expect(await violations("src/engine/llamacpp/engine.ts", "../../icr/sampling.js")).toEqual([]);
    expect(await violations("src/cli/commands/doctor.ts", "../../train/consistency.js")).toEqual([]);
    // From depth 2, `../trainer` would be a folder src/engine/trainer, inside the engine; from depth 1 it is the trainer.
    expect(await violations("src/engine/remote/x.ts", "../trainer/x.js")).toEqual([]);
    expect(await violations("src/engine/x.ts", "../trainer/x.js")).toHaveLength(1);
    expect(await violations("src/rollout/stack.ts", "../proxy/index.js")).toEqual([]);
  });
});
