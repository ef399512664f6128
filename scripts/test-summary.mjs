#!/usr/bin/env node
// The test command's closing line: one total over vitest and the worker's unittest run, in the plain
// "N passed, N failed, N skipped" form that CI reads (neither runner's own closing line is one CI knows).
// It stands alone as the last line, and no line before it says "passed": CI judged two runs whose last
// lines were "vitest N passed in F files; ..." and "tests: N passed, ..." as having run no test.
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
console.log(`\nvitest: ${vitest.numPassedTests} of ${vitest.numTotalTests} tests ok in ${files} files; worker (unittest): ${python.passed} ok`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
