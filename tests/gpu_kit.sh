#!/usr/bin/env bash
# tests/gpu_kit.sh: the whole full-mode kit on one CUDA GPU, and its time table.
#
#   1. `python -m hedgekit reproduce --device cuda --train-missing --jobs N`: every checkpoint the full-mode notebooks
#      need and do not find, trained in N worker processes that share the GPU (N: KIT_JOBS, default 4: 15-16
#      workers gave no more throughput than one, and 14 finished 4 models in 422 s where 4 finished 9 in 331 s,
#      docs/speed.md; `hedgekit.repro.pool.job_limit` lowers it to what cores and memory hold), the seeds of one
#      point or MoG-1 spec stacked into one model (`hedgekit.zoo.seed_sets`; add --one-by-one to train each alone:
#      a stacked HIB step is not captured and lost to one-by-one ones there), point and HIB models captured as one
#      CUDA graph per step where they can (`hedgekit.training.captured`). Baseline to beat: 66 checkpoints in 655 s
#      with 15 workers; goal: the whole kit, training and notebooks, in <= 30 minutes;
#   2. `python -m hedgekit reproduce --device cuda`: every registered notebook in full mode, DEVICE = "cuda".
# Both write into RESULTS_DIR/kit (train.json, run.json, summary.md, times.md) and, with KIT_TIMES_TO=FILE (e.g.
# docs/speed.md, relative to the repository), replace FILE's marked time-table section (`hedgekit.repro.times`).
# Steps run in that order; KIT_STEPS=train or KIT_STEPS=notebooks runs one of them. Both are cumulative: run again
# into the same RESULTS_DIR, cached checkpoints are not retrained and the report keeps the notebooks already run,
# so a kit longer than one sitting can be run in parts (e.g. KIT_STEPS=notebooks ... --only hib, then --only spe).
# Extra arguments go to both commands (e.g. --only 04).
#
# Usage, from anywhere: bash tests/gpu_kit.sh [RESULTS_DIR [REPRODUCE_ARGS...]]
#   RESULTS_DIR: as for tests/gpu_check.sh (default $OUT, else ./gpu-check-results); its hedgekit-data/ receives
#   the checkpoints (the user's cache is never written). To run the kit in parts on a machine whose $OUT starts
#   empty at every call, give a folder that stays, e.g. reports/gpu (git-ignored): with $OUT set elsewhere the
#   records (train.json, run.json, times.md, summary.md, the logs) are copied there at the end of each part.
#   After the results come back to a machine without the GPU,
#   `python -c "from hedgekit.repro.times import write_times; write_times('RESULTS_DIR/kit', 'docs/speed.md')"`
#   writes the same table into that machine's docs/speed.md.
#
# Prerequisites: those of tests/gpu_check.sh (sourced for them: CUDA, pytest, MNIST, Fashion-MNIST), and what the
# notebooks import besides: papermill, nbformat, nbclient, ipykernel, ipywidgets, plotly and cleanlab (bring their
# wheels, with the wheels they need, in GPU_CHECK_WHEELS). No time limit of its own: give it the time the kit needs.
set -euo pipefail

KIT_ARGS=("${@:2}")
GPU_CHECK_PREREQUISITES_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/gpu_check.sh" "${1:-${OUT:-gpu-check-results}}"
missing=$("$PY" - <<'PY'
import importlib.util
print(" ".join(m for m in ("papermill", "nbformat", "nbclient", "ipykernel", "ipywidgets", "plotly", "cleanlab")
               if importlib.util.find_spec(m) is None))
PY
)
[[ -z "$missing" ]] || fail "prerequisites: the notebooks need $missing: bring their wheels in GPU_CHECK_WHEELS" 2
times_to=()
if [[ -n "${KIT_TIMES_TO:-}" ]]; then
    times_to=(--times-to "$KIT_TIMES_TO")
fi
kit=(--device cuda --out "$RESULTS/kit" ${times_to[@]+"${times_to[@]}"} ${KIT_ARGS[@]+"${KIT_ARGS[@]}"})
steps="${KIT_STEPS:-train notebooks}"

if [[ " $steps " == *" train "* ]]; then
    t0=$SECONDS
    "$PY" -m hedgekit reproduce --train-missing --jobs "${KIT_JOBS:-4}" "${kit[@]}" 2>&1 |
        tee -a "$RESULTS/kit-train.log" || fail "kit: training FAILED after $((SECONDS - t0)) s (log: \
$RESULTS/kit-train.log)"
    say "kit: training: $(grep -E '^\[train\] [0-9]+ trained' "$RESULTS/kit-train.log" | tail -n 1) \
($((SECONDS - t0)) s)"
fi
if [[ " $steps " == *" notebooks "* ]]; then
    t0=$SECONDS
    "$PY" -m hedgekit reproduce "${kit[@]}" 2>&1 | tee -a "$RESULTS/kit-notebooks.log" ||
        fail "kit: notebooks FAILED after $((SECONDS - t0)) s (log: $RESULTS/kit-notebooks.log)"
    say "kit: notebooks: $(grep -c ': ok in ' "$RESULTS/kit-notebooks.log") ok in $((SECONDS - t0)) s"
fi
# the records, where $OUT is fetched (RESULTS_DIR may be a folder that stays between calls)
if [[ -n "${OUT:-}" && "$(mkdir -p "$OUT" && cd "$OUT" && pwd)" != "$RESULTS" ]]; then
    mkdir -p "$OUT/kit"
    cp "$RESULTS"/kit-*.log "$OUT"/ 2>/dev/null || true
    for f in train.json run.json times.md summary.md; do
        [[ ! -f "$RESULTS/kit/$f" ]] || cp "$RESULTS/kit/$f" "$OUT/kit/"
    done
fi
say "kit: time table in $RESULTS/kit/times.md${KIT_TIMES_TO:+ and $KIT_TIMES_TO}"
