#!/usr/bin/env bash
# The prepared GPU check: what every GPU measurement of beast should record, in one run of about
# 7.5 minutes (at most 9.5) on one H100/H200 with 16 cores.  Whoever gets a GPU runs this first and
# records its table in bench/gpu.md ("The GPU check").
#
#   bash bench/gpu_check.sh [OUTDIR]        (default: $OUT when set, else bench/gpu_runs/check-DATE)
#
# What it runs (each `beast tune` capped by --time, so the whole stays inside the estimate):
#   the paper's template (spaces/gemm.py, CUDA cores), $BEAST_CHECK_TIME (25 s) each:
#     DGEMM NN 4096^3  random and portfolio (the default), budget 200 each
#     SGEMM NN 4096^3  random and portfolio (the default), budget 120 each
#     ZGEMM NN 2048^3  random and portfolio (the default), budget 200 each
#   the same template with MAGMA's switches (spaces/gemm_magma.py, issue 25), $BEAST_CHECK_MAGMA_TIME (40 s):
#     SGEMM NN 4096^3  random, budget 150 (33.7 M survivors on the H100/H200: drawing the sample
#                      costs about a count of them, inside the cap: 27 s on 1 busy core, a few on 16)
#   the FP64 tensor-core family (spaces/gemm_mma.py, issue 25), $BEAST_CHECK_MMA_TIME (45 s) each:
#     DGEMM NN 4096^3  random, budget 300, and portfolio (the default), budget 200
#     ZGEMM NN 2048^3  random, budget 200
#   the GPU tests    tests/test_tune_gpu.py, test_tune_kernel.py, test_tune_log.py, test_tune_mma.py,
#                    test_tune_magma.py
# Estimate: 6 x 25 s + 40 s + 3 x 45 s of tuning, about 30 s of start-up and cuBLAS references, at most
# 150 s of tests (about 100 s expected): 7.5 minutes.  Every configuration is verified against
# cuBLAS before it is timed, so the new rows also say whether their kernels are right.
# and writes OUTDIR/table.md (one Markdown table: best GFLOP/s, cuBLAS, % of cuBLAS,
# configurations per second, GPU busy share, early cuts), OUTDIR/*.jsonl (the logs),
# OUTDIR/*.txt (each command's output) and OUTDIR/tests.txt.
#
# The GPU machines lent here have CuPy, NumPy, scikit-learn, pytest and hypothesis but no network
# and no cffi, pycparser or lupa (beast's C and Lua backends).  Bring these wheels (Python 3.12,
# x86-64) in .whl/ at the repository root, downloaded on a machine with PyPI:
#
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#       -d .whl cffi==2.1.1 pycparser==3.12 lupa==2.8
#
# (.whl/ is git-ignored: with the device tool, name it in `carry`.)  The script installs them
# offline into a private folder; without them beast still runs, on its Python backend (slower).
# On a machine without a GPU it says so in one line and exits with status 2.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
TIME=${BEAST_CHECK_TIME:-25s}          # the cap of each tuning run of the paper's template
MMA_TIME=${BEAST_CHECK_MMA_TIME:-45s}  # the cap of each tuning run of the tensor-core family
MAGMA_TIME=${BEAST_CHECK_MAGMA_TIME:-40s}  # the cap of the run of the paper's template with MAGMA's switches

if ! "$PY" -c 'import sys, cupy; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)' 2>/dev/null; then
    echo "gpu_check: no NVIDIA GPU here (CuPy cannot import or sees no device): nothing measured"
    exit 2
fi

OUTDIR=${1:-${OUT:-$ROOT/bench/gpu_runs/check-$(date -u +%Y-%m-%d)}}
mkdir -p "$OUTDIR"
SITE=${TMPDIR:-/tmp}/beast-gpu-check-site
if ls "$ROOT"/.whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
        "$ROOT"/.whl/*.whl 2>&1 | tail -2 || true
fi
export PYTHONPATH="$SITE:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
missing=$("$PY" -c 'import importlib.util as u; print(" ".join(m for m in ("cffi", "lupa", "sklearn") if u.find_spec(m) is None))')
[ -n "$missing" ] && echo "gpu_check: missing $missing (see the wheels above); going on without them"

start=$(date +%s)
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); beast at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>/dev/null
    echo "CPUs: $(nproc); $("$PY" -c 'import sys, cupy; print("Python", sys.version.split()[0], "CuPy", cupy.__version__)')"
} > "$OUTDIR/machine.txt"
cat "$OUTDIR/machine.txt"

seconds() { case $1 in *m) echo $(( ${1%m} * 60 ));; *s) echo "${1%s}";; *) echo "$1";; esac; }

tune() {   # name, space file, time cap, then the arguments of beast tune
    local name=$1 space=$2 cap=$3; shift 3
    rm -f "$OUTDIR/$name.jsonl"
    echo "== $name: beast tune $space $*"
    timeout -s INT $(( $(seconds "$cap") + 55 )) "$PY" -m beast tune "$space" --device auto --time "$cap" -q \
        --log "$OUTDIR/$name.jsonl" "$@" > "$OUTDIR/$name.txt" 2>&1
    echo "   exit $?, $(grep -m1 '^measured' "$OUTDIR/$name.txt" || tail -1 "$OUTDIR/$name.txt")"
}

for strategy in random portfolio; do
    tune "dgemm_$strategy" spaces/gemm.py "$TIME" --size 4096 4096 4096 --budget 200 --strategy "$strategy"
    tune "sgemm_$strategy" spaces/gemm.py "$TIME" --size 4096 4096 4096 --budget 120 --strategy "$strategy" \
        -D precision=single
    tune "zgemm_$strategy" spaces/gemm.py "$TIME" --size 2048 2048 2048 --budget 200 --strategy "$strategy" \
        -D arithmetic=complex
done
tune sgemm_magma_random spaces/gemm_magma.py "$MAGMA_TIME" --size 4096 4096 4096 --budget 150 --strategy random \
    -D precision=single
tune dgemm_mma_random spaces/gemm_mma.py "$MMA_TIME" --size 4096 4096 4096 --budget 300 --strategy random
tune dgemm_mma_portfolio spaces/gemm_mma.py "$MMA_TIME" --size 4096 4096 4096 --budget 200 --strategy portfolio
tune zgemm_mma_random spaces/gemm_mma.py "$MMA_TIME" --size 2048 2048 2048 --budget 200 --strategy random \
    -D arithmetic=complex

echo "== GPU tests"
timeout 150 "$PY" -m pytest -p no:cacheprovider tests/test_tune_gpu.py tests/test_tune_kernel.py \
    tests/test_tune_log.py tests/test_tune_mma.py tests/test_tune_magma.py > "$OUTDIR/tests.txt" 2>&1
tests=$(tail -1 "$OUTDIR/tests.txt" | sed 's/=//g; s/^ *//; s/ *$//')
echo "   $tests"

"$PY" bench/gpu_table.py "$OUTDIR"/{d,s,z}gemm_{random,portfolio}.jsonl "$OUTDIR"/sgemm_magma_random.jsonl \
    "$OUTDIR"/dgemm_mma_{random,portfolio}.jsonl "$OUTDIR"/zgemm_mma_random.jsonl --tests "$tests" > "$OUTDIR/table.md"
echo "== $(( $(date +%s) - start )) s; the table ($OUTDIR/table.md):"
cat "$OUTDIR/table.md"
