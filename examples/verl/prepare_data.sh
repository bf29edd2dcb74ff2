#!/usr/bin/env bash
# Convert the rephrased MATH train set and MATH-500 to verl's parquet format (see docs/verl.md).
#   bash examples/verl/prepare_data.sh outputs/rephrased/math_train.jsonl [MODEL_OR_TOKENIZER]
# With a tokenizer, rephrasings longer than 512 prompt tokens are dropped (the trainer fills the slot with q0).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python}
REPHRASED=${1:-outputs/rephrased/math_train.jsonl}
TOKENIZER=${2:-}
"$PYTHON" -m tagrpo.integrations.verl.convert "$REPHRASED" data/verl/math_train.parquet \
    --num-rephrasings 3 ${TOKENIZER:+--tokenizer "$TOKENIZER" --max-prompt-length 512}
"$PYTHON" -m tagrpo.integrations.verl.convert --benchmark math500 data/verl/math500.parquet
