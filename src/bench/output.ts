import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Writes a benchmark's result as JSON to `out` (creating its folder) and prints it. */
export function writeBenchResult(out: string, result: unknown): void {
  mkdirSync(dirname(out), { recursive: true });
  const text = `${JSON.stringify(result, null, 2)}\n`;
  writeFileSync(out, text);
  process.stdout.write(text);
}
