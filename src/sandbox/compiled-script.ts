import { existsSync } from "node:fs";
import { sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * A helper process's compiled entry (`url`, e.g. `new URL("./main.js", import.meta.url)`): next to the calling module,
 * or in dist/ when that module runs from its TypeScript source (tests). Undefined when not built.
 */
export function compiledScript(url: URL): string | undefined {
  const here = fileURLToPath(url);
  const fromSource = here.replace(`${sep}src${sep}sandbox${sep}`, `${sep}dist${sep}sandbox${sep}`);
  return [here, fromSource].find((p) => existsSync(p));
}
