import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/**
 * What a built-in harness's sandbox may see of this package: its entry file and the compiled modules it imports
 * (followed through relative imports), the npm packages those import (with their dependencies), and package.json.
 * Never the rest of dist/: dist/tasks holds the task generators, gold answers and verifiers, so a policy that could
 * read it could regenerate its task and read the answer.
 */

const SPECIFIER = /(?:^|[\n;])\s*(?:import|export)\s[^;"']*?from\s*["']([^"']+)["']|(?:^|[\n;])\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;

/** Static and literal dynamic import specifiers of one compiled ES module. */
export function importSpecifiers(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(SPECIFIER)) {
    const s = m[1] ?? m[2] ?? m[3];
    if (s) out.push(s);
  }
  return out;
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`; node built-ins → null. */
export function packageNameOf(specifier: string): string | null {
  if (specifier.startsWith("node:")) return null;
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
  return name || null;
}

function readDeps(pkgDir: string): string[] {
  try {
    const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as Record<string, unknown>;
    const names = new Set<string>();
    for (const field of ["dependencies", "peerDependencies", "optionalDependencies"]) {
      const deps = pkg[field];
      if (deps && typeof deps === "object") for (const n of Object.keys(deps)) names.add(n);
    }
    return [...names];
  } catch {
    return [];
  }
}

/**
 * The host paths to bind read-only for `entry` (an absolute path under `packageRoot`): compiled files reached by
 * relative imports, the top-level `node_modules/<pkg>` folders of every package imported and their dependencies
 * (nested node_modules come with their package's folder), and package.json (module type). Missing optional
 * dependencies are skipped. Bounded by the number of files and packages in the package.
 */
export function builtinMountSet(packageRoot: string, entry: string): string[] {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [resolve(entry)];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (files.has(file) || !existsSync(file)) continue;
    files.add(file);
    for (const spec of importSpecifiers(readFileSync(file, "utf8"))) {
      if (spec.startsWith(".")) queue.push(resolve(dirname(file), spec));
      else {
        const name = packageNameOf(spec);
        if (name) packages.add(name);
      }
    }
  }
  const pkgDirs: string[] = [];
  const pending = [...packages];
  const seen = new Set<string>();
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const dir = join(packageRoot, "node_modules", name);
    if (!existsSync(dir)) continue;
    pkgDirs.push(dir);
    pending.push(...readDeps(dir));
  }
  return [...[...files].sort(), ...pkgDirs.sort(), join(packageRoot, "package.json")];
}
