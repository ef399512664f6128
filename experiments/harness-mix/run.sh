#!/bin/sh
# Runs the mix-harness experiment (docs/harness-bandit.md): one shared warm start, then four arms at equal budgets,
# then prints the results table. Run from the repository root after `npm run build`: sh experiments/harness-mix/run.sh
set -e
node dist/cli/main.js train --config experiments/harness-mix/warm.yaml --run-dir runs/exp-mix-warm
for arm in single mixed round-robin harness-bandit; do
  node dist/cli/main.js train --config experiments/harness-mix/$arm.yaml --run-dir runs/exp-mix-$arm
done
node experiments/harness-mix/table.mjs
