// Bundles each compiled built-in harness (dist/harness/builtin/<name>.js) with the SDKs it imports into one ES module,
// dist/harness/builtin/bundles/<name>.mjs: a harness starts once per rollout, and loading the OpenAI SDK and zod as
// hundreds of separate modules cost ~0.35 s of CPU per start on a loaded 2-core machine vs ~0.2 s bundled
// (docs/harnesses.md). The sandbox then needs only that one file. Run by `npm run build` after tsc.
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "rolldown";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = join(root, "dist", "harness", "builtin");
const out = join(dir, "bundles");
const HARNESSES = ["chat-agent", "resp-agent", "claw-agent", "central-agent"];

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const name of HARNESSES) {
  const input = join(dir, `${name}.js`);
  if (!existsSync(input)) throw new Error(`bundle-harnesses: ${input} is missing (run tsc first)`);
  await build({ input, platform: "node", logLevel: "warn", output: { file: join(out, `${name}.mjs`), format: "esm", sourcemap: false, codeSplitting: false } });
}
console.log(`bundled ${HARNESSES.length} built-in harnesses into ${out}`);
