#!/bin/sh
# Runs the CAPO / multi-agent experiment (docs/training.md, "CAPO and multi-agent training"): one shared warm start on
# lookuprun through the central agent, then GRPO vs CAPO × joint vs central-only at equal budgets, then the table.
# Run from the repository root after `npm run build`: sh experiments/capo-central/run.sh
set -e
node dist/cli/main.js train --config experiments/capo-central/warm.yaml --run-dir runs/exp-capo-warm
for arm in grpo-joint grpo-central capo-joint capo-central; do
  node dist/cli/main.js train --config experiments/capo-central/$arm.yaml --run-dir runs/exp-capo-$arm
done
node experiments/capo-central/table.mjs
