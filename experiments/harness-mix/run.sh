#!/bin/sh
# Runs the mix-harness experiment (docs/harness-bandit.md): one shared warm start, then four arms at equal budgets,
# then prints the results table. Run from the repository root after `npm run build`: sh experiments/harness-mix/run.sh
# Results of 2026-12-01 (quickstart GRPO recipe, ~21 min on 2 cores) are in docs/harness-bandit.md: after RL the arms
# measured 86.7-93.3 % on the training harnesses against a pooled 81.7 % warm start (within noise of each other);
# the held-out central-agent stayed at 0.
# The optional probe arm (harness-bandit-probe.yaml: claw-agent as a probe harness) runs with PROBE_ARM=1; table.mjs
# adds its row when its run directory exists.
set -e
node dist/cli/main.js train --config experiments/harness-mix/warm.yaml --run-dir runs/exp-mix-warm
arms="single mixed round-robin harness-bandit"
[ "${PROBE_ARM:-0}" = 1 ] && arms="$arms harness-bandit-probe"
for arm in $arms; do
  node dist/cli/main.js train --config experiments/harness-mix/$arm.yaml --run-dir runs/exp-mix-$arm
done
node experiments/harness-mix/table.mjs
