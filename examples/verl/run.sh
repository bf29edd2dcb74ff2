#!/usr/bin/env bash
# Launch one of the paper's MATH runs on verl (see docs/verl.md). Extra arguments are verl/Hydra overrides.
#   MODEL=qwen3_1.7b METHOD=ta_grpo GPUS=4 bash examples/verl/run.sh
#   MODEL=qwen3_4b METHOD=grpo GPUS=8 NODES=2 bash examples/verl/run.sh trainer.save_freq=25   # on a Ray cluster's head
# MODEL: qwen3_1.7b | qwen3_4b | llama3.2_1b | llama3.2_3b;  METHOD: ta_grpo | grpo | equal_sampling
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python}
exec "$PYTHON" -m tagrpo.integrations.verl.main \
    --config-path "$PWD/examples/verl/config" --config-name tagrpo \
    tagrpo_model="${MODEL:-qwen3_1.7b}" tagrpo_method="${METHOD:-ta_grpo}" \
    trainer.n_gpus_per_node="${GPUS:-4}" trainer.nnodes="${NODES:-1}" \
    data.train_files="${TRAIN_FILES:-data/verl/math_train.parquet}" data.val_files="${VAL_FILES:-data/verl/math500.parquet}" \
    "$@"
