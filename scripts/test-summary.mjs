#!/usr/bin/env node
// The test command's closing line: one total over vitest and the worker's unittest run, in the plain
// "N passed, N failed, N skipped" form that CI reads (neither runner's own closing line is one CI knows).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const results = join(dirname(fileURLToPath(import.meta.url)), "..", ".cache", "test-results");
const read = (name) => JSON.parse(readFileSync(join(results, name), "utf8"));
const vitest = read("vitest.json");
const python = read("python.json");
const passed = vitest.numPassedTests + python.passed;
const failed = vitest.numFailedTests + python.failed;
const files = vitest.testResults.length;
const skipped = vitest.numPendingTests + vitest.numTodoTests + python.skipped;
console.log(`\nvitest ${vitest.numPassedTests} passed in ${files} files; worker (unittest) ${python.passed} passed`);
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
