#!/bin/sh
# Runs the mix-harness experiment (docs/harness-bandit.md): one shared warm start, then four arms at equal budgets,
# then prints the results table. Run from the repository root after `npm run build`: sh experiments/harness-mix/run.sh
# Results of 2026-12-01 (quickstart GRPO recipe, ~21 min on 2 cores) are in docs/harness-bandit.md: after RL the arms
# measured 86.7-93.3 % on the training harnesses against a pooled 81.7 % warm start (within noise of each other);
# the held-out central-agent stayed at 0.
set -e
node dist/cli/main.js train --config experiments/harness-mix/warm.yaml --run-dir runs/exp-mix-warm
for arm in single mixed round-robin harness-bandit; do
  node dist/cli/main.js train --config experiments/harness-mix/$arm.yaml --run-dir runs/exp-mix-$arm
done
node experiments/harness-mix/table.mjs
