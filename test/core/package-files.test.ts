import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

/** The files `npm pack` would publish (dist/ only when built, so it is checked through package.json's `files`). */
function packedFiles(): string[] {
  const r = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: ROOT, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`npm pack --dry-run failed: ${r.stderr}`);
  const [pack] = JSON.parse(r.stdout) as { files: { path: string }[] }[];
  return (pack?.files ?? []).map((f) => f.path);
}

describe("the published package", () => {
  it("ships what an installed `harnessrl quickstart` reads: its configs, the chat template, the torch worker, dist/", () => {
    const files = packedFiles();
    expect(files).toContain("configs/quickstart.yaml");
    expect(files).toContain("templates/chatml-tools.jinja");
    expect(files).toContain("worker/harnessrl_worker/__main__.py");
    // The dashboard's client and the chart code report.html inlines are read from src/ at run time.
    expect(files).toEqual(expect.arrayContaining(["src/dashboard/static/app.js", "src/dashboard/static/cluster.js", "src/report/static/charts.js"]));
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { files: string[]; bin: Record<string, string> };
    expect(pkg.files).toContain("dist");
    expect(pkg.bin.harnessrl?.startsWith("dist/")).toBe(true);
  }, 120_000);
});
