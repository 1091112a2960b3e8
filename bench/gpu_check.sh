#!/usr/bin/env bash
# The prepared GPU check: what every GPU measurement of beast should record, in one run of at most
# 8 minutes on one H100/H200 with 16 cores.  Whoever gets a GPU runs this first and records its
# table in bench/gpu.md ("The GPU check").
#
#   bash bench/gpu_check.sh [OUTDIR]        (default: $OUT when set, else bench/gpu_runs/check-DATE)
#
# What it runs (each `beast tune` capped by --time, so the whole stays inside 8 minutes):
#   DGEMM NN 4096^3  random and hybrid, budget 200 each
#   SGEMM NN 4096^3  random and hybrid, budget 120 each
#   ZGEMM NN 2048^3  random and hybrid, budget 200 each
#   the GPU tests    tests/test_tune_gpu.py, test_tune_kernel.py, test_tune_log.py
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
TIME=${BEAST_CHECK_TIME:-45s}          # the cap of each tuning run

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

tune() {   # name, then the arguments of beast tune
    local name=$1; shift
    rm -f "$OUTDIR/$name.jsonl"
    echo "== $name: beast tune $*"
    timeout -s INT 100 "$PY" -m beast tune spaces/gemm.py --device auto --time "$TIME" -q \
        --log "$OUTDIR/$name.jsonl" "$@" > "$OUTDIR/$name.txt" 2>&1
    echo "   exit $?, $(grep -m1 '^measured' "$OUTDIR/$name.txt" || tail -1 "$OUTDIR/$name.txt")"
}

for strategy in random hybrid; do
    tune "dgemm_$strategy" --size 4096 4096 4096 --budget 200 --strategy "$strategy"
    tune "sgemm_$strategy" --size 4096 4096 4096 --budget 120 --strategy "$strategy" -D precision=single
    tune "zgemm_$strategy" --size 2048 2048 2048 --budget 200 --strategy "$strategy" -D arithmetic=complex
done

echo "== GPU tests"
timeout 150 "$PY" -m pytest -p no:cacheprovider tests/test_tune_gpu.py tests/test_tune_kernel.py \
    tests/test_tune_log.py > "$OUTDIR/tests.txt" 2>&1
tests=$(tail -1 "$OUTDIR/tests.txt" | sed 's/=//g; s/^ *//; s/ *$//')
echo "   $tests"

"$PY" bench/gpu_table.py "$OUTDIR"/{d,s,z}gemm_{random,hybrid}.jsonl --tests "$tests" > "$OUTDIR/table.md"
echo "== $(( $(date +%s) - start )) s; the table ($OUTDIR/table.md):"
cat "$OUTDIR/table.md"
