import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Compiles src/ to dist/ once before the suite: tests that spawn real processes (the CLI, sandboxed harnesses,
 * bridges) run the compiled JavaScript, exactly as users do. Type errors are reported by the type-check step of
 * `npm test`; here we only need the emitted files. Then the built-in harnesses are bundled, as `npm run build` does:
 * without the bundles, harnesses silently run unbundled and the tests of what their sandboxes mount fail.
 */
export default function setup(): void {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
  if (process.env.HARNESSRL_SKIP_BUILD === "1") return;
  const r = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "tsconfig.json")], { cwd: root, encoding: "utf8" });
  if (r.status !== 0 && !r.stdout.includes("error TS")) throw new Error(`build failed: ${r.stderr}`);
  const b = spawnSync(process.execPath, [join(root, "scripts", "bundle.mjs")], { cwd: root, encoding: "utf8" });
  if (b.status !== 0) throw new Error(`bundling the built-in harnesses and the exec agent failed: ${b.stderr}`);
}
