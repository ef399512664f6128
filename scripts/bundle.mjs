// Bundles what runs once per rollout, inside a sandbox, into single CommonJS files (rolldown), run by `npm run build`
// after tsc:
// - each built-in harness (dist/harness/builtin/<name>.js) with the SDKs it imports, into
//   dist/harness/builtin/bundles/<name>.cjs: loading the OpenAI SDK and zod as hundreds of separate modules cost ~0.35 s
//   of CPU per start on a loaded 2-core machine vs ~0.2 s bundled (docs/harnesses.md), and the sandbox then needs only
//   that one file;
// - the sandbox exec agent (dist/sandbox/agent/main.js and the three modules it imports) into
//   dist/sandbox/agent/main.cjs, the one file every sandbox mounts;
// - the harnesses' starter (dist/harness/builtin/cached-start.js) into bundles/cached-start.cjs, then each harness's
//   V8 code cache, bundles/<name>.v8cache, written by one warm-up run of the harness (src/rollout/code-cache.ts):
//   ~18 ms less CPU per harness process (docs/harnesses.md, session 46).
// CommonJS, not an ES module: Node 20 starts its ES module loader for an .mjs entry, ~10 ms of CPU per process that a
// .cjs entry does not pay (docs/harnesses.md, session 45).
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "rolldown";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const harnessDir = join(root, "dist", "harness", "builtin");
const out = join(harnessDir, "bundles");
const HARNESSES = ["chat-agent", "resp-agent", "claw-agent", "central-agent"];
const agentEntry = join(root, "dist", "sandbox", "agent", "main.js");

async function bundle(input, file) {
  if (!existsSync(input)) throw new Error(`bundle: ${input} is missing (run tsc first)`);
  await build({ input, platform: "node", logLevel: "warn", output: { file, format: "cjs", sourcemap: false, codeSplitting: false } });
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const name of HARNESSES) await bundle(join(harnessDir, `${name}.js`), join(out, `${name}.cjs`));
await bundle(agentEntry, join(dirname(agentEntry), "main.cjs"));
await bundle(join(harnessDir, "cached-start.js"), join(out, "cached-start.cjs"));
console.log(`bundled ${HARNESSES.length} built-in harnesses into ${out} and the sandbox exec agent into ${dirname(agentEntry)}/main.cjs`);
const { writeBuiltinCodeCaches } = await import(join(root, "dist", "rollout", "code-cache.js"));
const caches = await writeBuiltinCodeCaches(HARNESSES);
const rejected = caches.filter((c) => c.check !== "accepted");
console.log(`code caches: ${caches.map((c) => `${c.harness} ${Math.round(c.bytes / 1024)} KB ${c.check}`).join(", ") || "off"}`);
if (rejected.length > 0) {
  // V8 refused a cache it just wrote under the same binary and flags: starting from it would only cost a read.
  for (const c of rejected) rmSync(c.cache, { force: true });
  console.error(`bundle: V8 did not accept the code cache of ${rejected.map((c) => c.harness).join(", ")}`);
  process.exit(1);
}
