#!/bin/sh
# More seeds of the CAPO / multi-agent experiment (docs/training.md): the four arms again from the same warm start with
# run seeds 1 and 2 (rollout sampling, task order, evaluation sampling), into runs/exp-capo-<arm>-s<seed>. Run after
# run.sh, from the repository root: sh experiments/capo-central/seeds.sh [seeds...]; then node experiments/capo-central/table.mjs
set -e
mkdir -p runs/exp-capo-configs
seeds="$*"
[ -n "$seeds" ] || seeds="1 2"
for seed in $seeds; do
  for arm in grpo-joint grpo-central capo-joint capo-central; do
    cfg=runs/exp-capo-configs/$arm-s$seed.yaml
    sed -e "s/^seed: 0$/seed: $seed/" -e "s/^name: exp-capo-$arm$/name: exp-capo-$arm-s$seed/" experiments/capo-central/$arm.yaml > "$cfg"
    grep -q "^seed: $seed$" "$cfg" || { echo "could not set the seed in $cfg" >&2; exit 1; }
    node dist/cli/main.js train --config "$cfg" --run-dir runs/exp-capo-$arm-s$seed
  done
done
