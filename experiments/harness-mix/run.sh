#!/bin/sh
# Runs the mix-harness experiment (docs/harness-bandit.md): one shared warm start, then four arms at equal budgets,
# then prints the results table. Run from the repository root after `npm run build`: sh experiments/harness-mix/run.sh
# Status: the first attempt (on calcfile, arms started from the warm start's model directory, i.e. a fresh AdamW, at
# lr 2e-3) collapsed in the `single` and `mixed` arms (train reward → 0, entropy 0.025 → 0.3). The configs now use
# calcrun, start every arm from the warm start's checkpoint (weights and AdamW state) and use the quickstart's
# measured-stable GRPO settings (lr 1e-3, one optimizer step per RL step); this version has not been run yet.
set -e
node dist/cli/main.js train --config experiments/harness-mix/warm.yaml --run-dir runs/exp-mix-warm
for arm in single mixed round-robin harness-bandit; do
  node dist/cli/main.js train --config experiments/harness-mix/$arm.yaml --run-dir runs/exp-mix-$arm
done
node experiments/harness-mix/table.mjs
