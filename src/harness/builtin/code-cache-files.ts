/** Where a built-in harness's V8 code cache lives, and the variable that drives cached-start.ts (both sides use it). */
export const CODE_CACHE_MODE_ENV = "HARNESSRL_CODE_CACHE";

/** The cache file of a bundle: `<name>.cjs` → `<name>.v8cache`. */
export function codeCachePath(bundle: string): string {
  return bundle.replace(/\.cjs$/, "") + ".v8cache";
}
