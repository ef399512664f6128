import { existsSync } from "node:fs";
import { sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * A helper process's or worker's compiled entry (`url`, e.g. `new URL("./main.js", import.meta.url)`): next to the
 * calling module, or in dist/ when that module runs from its TypeScript source (tests). Undefined when not built.
 */
export function compiledScript(url: URL): string | undefined {
  const here = fileURLToPath(url);
  // The project's own src/ is the last `src` folder on the path (none of its subfolders is named src).
  const src = `${sep}src${sep}`;
  const at = here.lastIndexOf(src);
  const fromSource = at < 0 ? here : `${here.slice(0, at)}${sep}dist${sep}${here.slice(at + src.length)}`;
  return [here, fromSource].find((p) => existsSync(p));
}
