#!/usr/bin/env bash
# The prepared GPU check: what every GPU measurement of beast should record, in calls of at most
# 300 s each, so that each fits one device command and a lent 15-minute window leaves room to
# rerun one.  Whoever gets a GPU runs it first and records its table in bench/gpu.md ("The GPU check").
#
#   bash bench/gpu_check.sh --dry-run            the calls, their commands and time caps; needs no GPU
#   bash bench/gpu_check.sh --check              the dependency check alone (also the first step of every call)
#   bash bench/gpu_check.sh --call 1 [OUTDIR]    the goals: FP64 tensor-core DGEMM and ZGEMM, MAGMA SGEMM
#   bash bench/gpu_check.sh --call 2 [OUTDIR]    the paper's template, DGEMM / SGEMM / ZGEMM
#   bash bench/gpu_check.sh --call 3 [OUTDIR]    the rest: portfolio runs and the GPU tests
#   bash bench/gpu_check.sh [OUTDIR]             every call in turn (up to 14 minutes: not for one device command)
#
# In a lent 15-minute window (the machine's start included) run call 1 first, each call as its own
# device command with a timeout of 330 s; calls 2 and 3 as the time left allows.
#
# OUTDIR defaults to $OUT when set, else bench/gpu_runs/check-DATE; every call adds its logs there
# and rewrites OUTDIR/table.md from all logs found, so the table grows call by call.  Each
# `beast tune` is capped by --time and by `timeout` at the cap plus its start-up allowance
# (STARTUP: imports, enumeration or sampling, the cuBLAS reference); a call's cap is the sum of
# its runs' caps plus SETUP for the dependency check and the machine facts.  Every configuration
# is verified against cuBLAS before it is timed, so the rows also say whether the kernels are right.
#
# The GPU machines lent here have CuPy, NumPy, scikit-learn, pytest and hypothesis but no network
# and maybe neither pytest-xdist nor cffi, pycparser and lupa (beast's C and Lua backends, which
# sampling of the MAGMA and tensor-core spaces needs to be quick).  Bring those wheels (Python 3.12,
# x86-64) in .whl/ at the repository root, downloaded on a machine with PyPI:
#
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#       -d .whl cffi==2.1.1 pycparser==3.12 lupa==2.8
#
# (.whl/ is git-ignored: with the device tool, name it in `carry`.)  The script installs them
# offline into a private folder.  The dependency check refuses to start (status 3) when CuPy,
# NumPy, pytest, scikit-learn (the default strategy), cffi or lupa cannot be imported after that,
# and says what to bring; BEAST_CHECK_ALLOW_MISSING=1 goes on without cffi/lupa (on the Python
# backend: slower sampling, fewer configurations in the caps).  The tests run with pyproject's
# addopts replaced (no `-n auto`), so pytest-xdist is not needed.  On a machine without a GPU a
# call says so in one line and exits with status 2.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
STARTUP=${BEAST_CHECK_STARTUP:-35}     # seconds allowed beyond --time for each tune run's start and end
SETUP=20                               # the dependency check, wheel install and machine facts
CALL_CAP=300                           # the most a call may take

# ---- the calls: one line per run: name | space | time cap (s) | beast tune arguments
call_runs() {
    case $1 in
    1) cat <<'EOF'
dgemm_mma_random|spaces/gemm_mma.py|65|--size 4096 4096 4096 --budget 300 --strategy random
sgemm_magma_random|spaces/gemm_magma.py|60|--size 4096 4096 4096 --budget 150 --strategy random -D precision=single
zgemm_mma_random|spaces/gemm_mma.py|50|--size 2048 2048 2048 --budget 200 --strategy random -D arithmetic=complex
EOF
    ;;
    2) cat <<'EOF'
dgemm_random|spaces/gemm.py|50|--size 4096 4096 4096 --budget 200 --strategy random
sgemm_random|spaces/gemm.py|50|--size 4096 4096 4096 --budget 120 --strategy random -D precision=single
zgemm_random|spaces/gemm.py|50|--size 2048 2048 2048 --budget 200 --strategy random -D arithmetic=complex
EOF
    ;;
    3) cat <<'EOF'
dgemm_mma_portfolio|spaces/gemm_mma.py|45|--size 4096 4096 4096 --budget 200 --strategy portfolio
dgemm_portfolio|spaces/gemm.py|30|--size 4096 4096 4096 --budget 200 --strategy portfolio
tests|tests|110|tests/unit/tune/device/test_gpu.py tests/unit/tune/kernels/test_paper.py tests/unit/tune/driver/test_log.py tests/unit/tune/kernels/test_mma.py tests/unit/tune/kernels/test_paper_magma.py
EOF
    ;;
    esac
}
CALLS="1 2 3"

call_cap() {   # the worst case of call $1 in seconds
    local total=$SETUP name space cap args
    while IFS='|' read -r name space cap args; do
        if [ "$name" = tests ]; then total=$(( total + cap )); else total=$(( total + cap + STARTUP )); fi
    done < <(call_runs "$1")
    echo "$total"
}

dry_run() {
    local c name space cap args over=0
    for c in $CALLS; do
        echo "call $c (at most $(call_cap "$c") s of $CALL_CAP):"
        echo "  dependency check, wheels, machine facts: at most $SETUP s"
        while IFS='|' read -r name space cap args; do
            if [ "$name" = tests ]; then
                echo "  timeout $cap $PY -m pytest -o addopts=-q -p no:cacheprovider $args"
            else
                echo "  timeout -s INT $(( cap + STARTUP )) $PY -m beast tune $space --device auto --time ${cap}s -q --log OUTDIR/$name.jsonl $args"
            fi
        done < <(call_runs "$c")
        [ "$(call_cap "$c")" -le "$CALL_CAP" ] || { echo "  ERROR: call $c can exceed $CALL_CAP s"; over=1; }
    done
    return $over
}

SITE=${TMPDIR:-/tmp}/beast-gpu-check-site
check_dependencies() {   # install the carried wheels, then refuse to start without what the calls need
    if ls "$ROOT"/.whl/*.whl >/dev/null 2>&1; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
            "$ROOT"/.whl/*.whl 2>&1 | tail -2 || true
    fi
    export PYTHONPATH="$SITE:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
    local missing optional
    missing=$("$PY" -c 'import importlib.util as u; print(" ".join(m for m in ("cupy", "numpy", "pytest", "hypothesis", "sklearn") if u.find_spec(m) is None))')
    optional=$("$PY" -c 'import importlib.util as u; print(" ".join(m for m in ("cffi", "pycparser", "lupa") if u.find_spec(m) is None))')
    if [ -n "$missing" ]; then
        echo "gpu_check: missing $missing: install them on the GPU machine first (nothing measured)"
        return 3
    fi
    if [ -n "$optional" ]; then
        if [ "${BEAST_CHECK_ALLOW_MISSING:-0}" = 1 ]; then
            echo "gpu_check: missing $optional; going on without them (BEAST_CHECK_ALLOW_MISSING=1)"
        else
            echo "gpu_check: missing $optional: bring their wheels in .whl/ (see the head of this script), or set BEAST_CHECK_ALLOW_MISSING=1"
            return 3
        fi
    fi
    "$PY" -c 'import beast' || { echo "gpu_check: beast does not import"; return 3; }
    return 0
}

require_gpu() {
    if ! "$PY" -c 'import sys, cupy; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)' 2>/dev/null; then
        echo "gpu_check: no NVIDIA GPU here (CuPy cannot import or sees no device): nothing measured"
        exit 2
    fi
}

run_call() {   # call number
    local c=$1 name space cap args start
    start=$(date +%s)
    {
        echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); beast at $(git rev-parse --short HEAD 2>/dev/null || echo '?'); call $c"
        nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>/dev/null
        echo "CPUs: $(nproc); $("$PY" -c 'import sys, cupy; print("Python", sys.version.split()[0], "CuPy", cupy.__version__)')"
    } >> "$OUTDIR/machine.txt"
    tail -3 "$OUTDIR/machine.txt"
    while IFS='|' read -r name space cap args; do
        if [ "$name" = tests ]; then
            echo "== GPU tests (cap $cap s)"
            # shellcheck disable=SC2086
            timeout "$cap" "$PY" -m pytest -o addopts=-q -p no:cacheprovider $args > "$OUTDIR/tests.txt" 2>&1
            echo "   $(tail -1 "$OUTDIR/tests.txt" | sed 's/=//g; s/^ *//; s/ *$//')"
            continue
        fi
        rm -f "$OUTDIR/$name.jsonl"
        echo "== $name (cap ${cap} s + ${STARTUP} s): beast tune $space $args"
        # shellcheck disable=SC2086
        timeout -s INT $(( cap + STARTUP )) "$PY" -m beast tune "$space" --device auto --time "${cap}s" -q \
            --log "$OUTDIR/$name.jsonl" $args > "$OUTDIR/$name.txt" 2>&1
        echo "   exit $?, $(grep -m1 '^measured' "$OUTDIR/$name.txt" || tail -1 "$OUTDIR/$name.txt")"
    done < <(call_runs "$c")
    write_table
    echo "== call $c: $(( $(date +%s) - start )) s; the table so far ($OUTDIR/table.md):"
    cat "$OUTDIR/table.md"
}

write_table() {
    local logs=() name tests=""
    for name in dgemm_mma_random zgemm_mma_random sgemm_magma_random dgemm_random sgemm_random zgemm_random \
                dgemm_mma_portfolio dgemm_portfolio; do
        [ -s "$OUTDIR/$name.jsonl" ] && logs+=("$OUTDIR/$name.jsonl")
    done
    [ -s "$OUTDIR/tests.txt" ] && tests=$(tail -1 "$OUTDIR/tests.txt" | sed 's/=//g; s/^ *//; s/ *$//')
    [ ${#logs[@]} -gt 0 ] && "$PY" bench/gpu_table.py "${logs[@]}" ${tests:+--tests "$tests"} > "$OUTDIR/table.md"
}

mode=all
outdir=""
while [ $# -gt 0 ]; do
    case $1 in
    --dry-run) mode=dry ;;
    --check) mode=check ;;
    --call) shift; mode=call; call=${1:-}
        case " $CALLS " in *" $call "*) ;; *) echo "gpu_check: --call takes one of: $CALLS"; exit 2;; esac ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "gpu_check: unknown option $1 (see --help)"; exit 2 ;;
    *) outdir=$1 ;;
    esac
    shift
done

case $mode in
dry) dry_run; exit $? ;;
check) check_dependencies; exit $? ;;
esac
require_gpu
check_dependencies || exit $?
OUTDIR=${outdir:-${OUT:-$ROOT/bench/gpu_runs/check-$(date -u +%Y-%m-%d)}}
mkdir -p "$OUTDIR"
if [ "$mode" = call ]; then
    run_call "$call"
else
    for c in $CALLS; do run_call "$c"; done
fi
