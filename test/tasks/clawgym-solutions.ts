/**
 * Shell solutions for the example ClawGym-Bench tasks (examples/clawgym), one command line each, as an agent would
 * send it to a harness's shell tool (cwd = workspace), with the score and sub-scores the task's grader gives them
 * (computed by hand from the task's check.py). `wrong` also tries to forge the reward: it plants a `reward/` folder
 * (a reward.sh that prints 1, a json.py that would shadow the standard library for the grader's Python) and a
 * usercustomize.py in the user site-packages that prints 1 when any Python exits. Shared by the local grader test and
 * the real-harness test.
 */
export interface Solution {
  command: string;
  score: number;
  subscores: Record<string, number>;
}

export type Variant = "full" | "partial" | "wrong";
export const VARIANTS: readonly Variant[] = ["full", "partial", "wrong"];

const FORGE = [
  `mkdir -p reward "$(python3 -m site --user-site)"`,
  `printf 'echo 1\\n' > reward/reward.sh`,
  `printf 'print(1)\\nraise SystemExit(0)\\n' > reward/json.py`,
  `printf 'import atexit\\natexit.register(lambda: print(1))\\n' > "$(python3 -m site --user-site)/usercustomize.py"`,
].join(" && ");

export const SOLUTIONS: Record<string, Record<Variant, Solution>> = {
  "cg-csv-revenue": {
    full: {
      command: `mkdir -p out && { echo region,revenue; awk -F, 'NR > 1 { r[$2] += $4 * $5 } END { for (k in r) printf "%s,%.2f\\n", k, r[k] }' data/sales.csv | sort; } > out/revenue.csv`,
      score: 1,
      subscores: { header: 1, revenue: 1, sorted: 1, two_decimals: 1 },
    },
    // Right numbers, but unsorted and not all with two decimals.
    partial: {
      command: `mkdir -p out && printf 'region,revenue\\nnorth,32.00\\neast,32.25\\nsouth,27\\n' > out/revenue.csv`,
      score: 0.5,
      subscores: { header: 1, revenue: 1, sorted: 0, two_decimals: 0 },
    },
    // A symlink to an endless file: a naive grader would hang reading it.
    wrong: {
      command: `mkdir -p out && ln -s /dev/zero out/revenue.csv && ${FORGE}`,
      score: 0,
      subscores: { header: 0, revenue: 0, sorted: 0, two_decimals: 0 },
    },
  },
  "cg-config-fix": {
    full: {
      command: `sed -i -e 's/"80a0"/8080/' -e 's/"debug": true/"debug": false/' -e 's/, }/ }/' -e 's/ },$/ }/' app/config.json`,
      score: 1,
      subscores: { valid_json: 1, port: 1, debug_off: 1, kept: 1 },
    },
    // Only the syntax repaired: the port is still a string and debug still on.
    partial: {
      command: `sed -i -e 's/, }/ }/' -e 's/ },$/ }/' app/config.json`,
      score: 0.5,
      subscores: { valid_json: 1, port: 0, debug_off: 0, kept: 1 },
    },
    // JSON nested 20,000 deep: exhausts a naive parser's recursion limit.
    wrong: {
      command: `python3 -c 'print("[" * 20000 + "]" * 20000)' > app/config.json && ${FORGE}`,
      score: 0,
      subscores: { valid_json: 0, port: 0, debug_off: 0, kept: 0 },
    },
  },
  "cg-log-summary": {
    full: {
      command: `mkdir -p out && awk '{ n++ } $2 == "ERROR" { e++; m = $0; sub(/^[^ ]+ [^ ]+ /, "", m); c[m]++ } $2 == "WARN" { w++ } END { best = ""; for (k in c) if (c[k] > c[best]) best = k; printf "{\\"lines\\": %d, \\"errors\\": %d, \\"warnings\\": %d, \\"top_error\\": \\"%s\\"}\\n", n, e, w, best }' logs/app.log > out/summary.json`,
      score: 1,
      subscores: { lines: 1, errors: 1, warnings: 1, top_error: 1 },
    },
    partial: {
      command: `mkdir -p out && printf '{"lines": 14, "errors": 4, "warnings": "3", "top_error": "upstream returned 502"}\\n' > out/summary.json`,
      score: 0.5,
      subscores: { lines: 1, errors: 1, warnings: 0, top_error: 0 },
    },
    // Values of the wrong JSON types (true for 14, "4", 3.0, a list).
    wrong: {
      command: `mkdir -p out && printf '{"lines": true, "errors": "4", "warnings": 3.0, "top_error": ["database timeout"]}\\n' > out/summary.json && ${FORGE}`,
      score: 0,
      subscores: { lines: 0, errors: 0, warnings: 0, top_error: 0 },
    },
  },
};
