"""The FP64 tensor-core GEMM family: spaces/gemm_mma.py, its CUDA template
(beast.tune.kernels.mma), nvcc/NVRTC compiling sampled survivors for sm_80 and sm_90, and the very
text run on CPU threads (the host simulator's warp MMA and cp.async) against exact products."""
import itertools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.errors import BeastError
from beast.tune.kernels import mma as kernel_mma
from beast.tune.kernels.families import family_of, get_family
from beast.tune.device.gpu import check_launch_rules
from beast.tune.kernels.mma import (A_FRAGMENT, B_FRAGMENT, C_FRAGMENT, MmaLayout, generate, translation_unit)
from beast.tune.driver.local import tune_family
from conftest import host_case
from conftest import TESTS as TESTS_DIR

ROOT = Path(TESTS_DIR).parent
MMA = str(ROOT / "spaces" / "gemm_mma.py")
GEMM = str(ROOT / "spaces" / "gemm.py")
TRANS = list(itertools.product((0, 1), (0, 1)))
CFG = dict(mma_m=8, mma_k=4, warps_m=2, warps_n=2, warp_m=16, warp_n=16, blk_k=8, stages=3, vec=2,
           pad_a=4, pad_b=4, swizzle=0, frag_buf=1)
DNN = dict(precision="double", arithmetic="real", trans_a=0, trans_b=0)


def settings(arithmetic, ta, tb):
    return dict(precision="double", arithmetic=arithmetic, trans_a=ta, trans_b=tb)


_SURVIVORS = {}


def survivors(device, st):
    """(space, every survivor) of the space for ``device`` and settings ``st`` (kept: enumerating
    costs 0.3 s, a first sample more)."""
    key = (device, tuple(sorted(st.items())))
    if key not in _SURVIVORS:
        space = beast.load(MMA, device=device, settings=st)
        _SURVIVORS[key] = (space, space.enumerate(backend="lua"))   # auto would build C for each
    return _SURVIVORS[key]


def pick(device, st, rng, want=None, max_threads=128):
    """A survivor of the space for ``device`` and settings ``st`` with at most ``max_threads``
    threads (host simulation runs one std::thread per CUDA thread), matching ``want``."""
    space, rows = survivors(device, st)
    ok = rows[32 * rows["warps_m"] * rows["warps_n"] <= max_threads]
    for name, value in (want or {}).items():
        ok = ok[ok[name] == value]
    assert len(ok), (device, st, want)
    row = ok[rng.integers(len(ok))]
    return space.settings, {n: int(row[n]) for n in space.iterators}


# ------------------------------------------------------------------ the space

def test_space_per_device():
    counts = {}
    for device in ("v100", "a100", "h100"):
        for arithmetic in ("real", "complex"):
            counts[device, arithmetic] = beast.load(MMA, device=device, settings=dict(arithmetic=arithmetic)).count()
    assert counts["v100", "real"] == counts["v100", "complex"] == 0      # no FP64 tensor cores
    assert all(counts[d, a] > 1000 for d in ("a100", "h100") for a in ("real", "complex"))
    assert counts["h100", "real"] > counts["a100", "real"]               # more shared memory, m16 shapes
    stats = beast.load(MMA, device="v100").stats()
    text = str(stats)
    assert re.search(r"no_fp64_tensor_cores\s+0\s+1\s+1", text), text
    a100 = beast.load(MMA, device="a100").enumerate()
    assert set(a100["mma_m"]) == {8} and set(a100["mma_k"]) == {4}
    h100 = beast.load(MMA, device="h100").sample(3000, seed=1)
    assert {(m, k) for m, k in zip(h100["mma_m"], h100["mma_k"])} == set(kernel_mma.SHAPES)


def test_every_sampled_survivor_generates_and_fits_the_device():
    from beast.lang.devices import resolve_device
    for device in ("a100", "h100"):
        profile = resolve_device(device)
        for arithmetic, (ta, tb) in itertools.product(("real", "complex"), TRANS):
            space, rows = survivors(device, settings(arithmetic, ta, tb))
            for row in rows[np.random.default_rng(ta + 2 * tb).integers(len(rows), size=60)]:
                k = generate({n: int(row[n]) for n in space.iterators}, space.settings)
                L = k.layout
                assert L.threads <= profile.max_threads_per_block
                assert L.smem_bytes <= profile.max_shared_mem_per_block_optin
                assert L.blk_m % (L.warps_m * L.mma_m) == 0 and L.blk_k % L.mma_k == 0
                assert L.vec * L.settings.itemsize in (8, 16)


def test_family_is_read_from_the_space():
    space = beast.load(MMA, device="h100")
    family, st = tune_family(space)
    assert family.name == "gemm_mma" and family_of(space) is get_family("gemm_mma") and st.precision == "double"
    assert family_of(beast.load(GEMM)).name == "gemm"
    with pytest.raises(BeastError, match=r"gemm_mma kernels need compute capability 8.0 .* k40c has 3.5"):
        tune_family(beast.load(MMA))                    # the default profile: the paper's K40c
    with pytest.raises(BeastError, match="unknown kernel family 'tensor'"):
        get_family("tensor")
    peak = get_family("gemm_mma").peak_gflops(space.device, "double")
    assert peak == 2 * space.device.peak_gflops("double")          # FP64 tensor cores: twice the CUDA cores


# ------------------------------------------------------------------ the text

def test_generation_is_deterministic_and_reads_parameters_by_name():
    a = generate(CFG, DNN)
    b = generate(dict(reversed(list(CFG.items()))), DNN)
    assert a.source == b.source and a.source_hash == b.source_hash
    assert 'extern "C" __global__ void __launch_bounds__(NT)\nbeast_gemm_mma(' in a.source
    assert "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64" in a.source
    assert "beast_cp_async<16>" in a.body and "STAGES = 3" in a.body
    assert a.block == (128, 1, 1) and a.grid(100, 33) == (4, 2, 1)
    assert a.smem_bytes == 3 * (8 * (32 + 4) + 32 * (8 + 4)) * 8
    with pytest.raises(BeastError) as err:
        generate({k: v for k, v in CFG.items() if k not in ("stages", "pad_b")}, DNN)
    assert "stages, pad_b" in str(err.value)


def test_template_refuses_what_the_space_rejects():
    cases = [(dict(CFG, mma_m=16, mma_k=4, warp_m=8), "not a multiple of the MMA"),
             (dict(CFG, mma_k=8), "no f64 MMA of shape m8n8k8"),
             (dict(CFG, blk_k=4, mma_m=16, mma_k=8, warp_m=16), "not a multiple of the MMA's k"),
             (dict(CFG, stages=1), "at least 2 stages"),
             (dict(CFG, warps_m=4, warps_n=4), "do not divide among 512 threads"),
             (dict(CFG, pad_a=1), "alignment")]
    for cfg, message in cases:
        with pytest.raises(BeastError, match=message):
            generate(cfg, DNN)
    with pytest.raises(BeastError, match="cp.async copies 8 or 16 bytes, not 32"):
        generate(CFG, dict(DNN, arithmetic="complex"))
    with pytest.raises(BeastError, match="double precision only"):
        generate(CFG, dict(DNN, precision="single"))


def test_launch_rules_use_the_copy_width():
    k = generate(CFG, DNN)                                   # vec = 2
    assert check_launch_rules(k, 37, 45, 29, 38, 30, 37) is None
    assert "vec=2 needs lda and ldb multiples of 2" in check_launch_rules(k, 37, 45, 29, 37, 29, 37)
    assert "aligned to 16 bytes" in check_launch_rules(k, 37, 45, 29, 38, 30, 37, (256, 8))


# The PTX ISA's fragment formulas for the f64 shapes, transcribed on their own ("Matrix Fragments
# for mma.m8n8k4 with .f64", "... mma.m16n8k4", "... mma.m16n8k8", "... mma.m16n8k16", .f64):
# (row, col) of register i of lane l, groupID g = l >> 2, threadID_in_group t = l % 4.
def isa_a(m, k, lane, i):
    g, t = lane >> 2, lane % 4
    if m == 8:
        return g, t
    if k == 4:
        return (g, t) if i == 0 else (g + 8, t)
    if k == 8:
        return (g if i in (0, 2) else g + 8), (t if i in (0, 1) else t + 4)
    return (g if i % 2 == 0 else g + 8), (i * 2 + t if i % 2 == 0 else i * 2 - 2 + t)


def isa_b(k, lane, i):
    g, t = lane >> 2, lane % 4
    return t + 4 * i, g


def isa_c(m, lane, i):
    g, t = lane >> 2, lane % 4
    if m == 8:
        return g, 2 * t + i
    return (g if i < 2 else g + 8), 2 * t + (i & 1)


def test_fragment_tables_follow_the_ptx_isa():
    for (m, k) in kernel_mma.SHAPES:
        cells = {"a": set(), "b": set(), "c": set()}
        for lane in range(32):
            g, q = lane >> 2, lane % 4
            for i, (dm, dk) in enumerate(A_FRAGMENT[m, k]):
                assert (g + dm, q + dk) == isa_a(m, k, lane, i)
                cells["a"].add((g + dm, q + dk))
            for i, dk in enumerate(B_FRAGMENT[k]):
                assert (q + dk, g) == isa_b(k, lane, i)
                cells["b"].add((q + dk, g))
            for i, (dm, dn) in enumerate(C_FRAGMENT[m]):
                assert (g + dm, 2 * q + dn) == isa_c(m, lane, i)
                cells["c"].add((g + dm, 2 * q + dn))
        # every element of A (m x k), B (k x 8), C (m x 8) held by exactly one lane register
        assert len(cells["a"]) == m * k == 32 * len(A_FRAGMENT[m, k])
        assert len(cells["b"]) == k * 8 == 32 * len(B_FRAGMENT[k])
        assert len(cells["c"]) == m * 8 == 32 * len(C_FRAGMENT[m])


# ------------------------------------------------------------------ nvcc and NVRTC

def _nvcc():
    return shutil.which("nvcc") or (os.path.exists("/usr/local/cuda/bin/nvcc") and "/usr/local/cuda/bin/nvcc") or None


def compile_sample():
    """Per architecture, survivors of its device's space: sm_80 from the A100's (m8n8k4), sm_90
    from the H100's (every f64 shape); double and double complex, every transpose."""
    rng = np.random.default_rng(11)
    out = {"sm_80": [], "sm_90": []}
    shapes = itertools.cycle(sorted(kernel_mma.SHAPES))
    for i, (arithmetic, (ta, tb)) in enumerate(itertools.product(("real", "complex"), TRANS)):
        st, cfg = pick("a100", settings(arithmetic, ta, tb), rng, max_threads=1024)
        out["sm_80"].append(generate(cfg, st, name=f"mma80_{i}"))
        m, k = next(shapes)
        st, cfg = pick("h100", settings(arithmetic, ta, tb), rng, dict(mma_m=m, mma_k=k), max_threads=1024)
        out["sm_90"].append(generate(cfg, st, name=f"mma90_{i}"))
    return out


@pytest.fixture(scope="module")
def nvcc_jobs(tmp_path_factory):
    nvcc = _nvcc()
    if not nvcc:
        pytest.skip("nvcc not found: cannot compile the generated kernels")
    folder = tmp_path_factory.mktemp("nvcc_mma")
    jobs = {}
    for arch, kernels in compile_sample().items():
        src = folder / f"{arch}.cu"
        src.write_text(translation_unit(kernels))
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-Werror", "all-warnings", str(src), "-o", str(src.with_suffix(".cubin"))]
        jobs[arch] = (kernels, cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    yield jobs
    for _, _, proc in jobs.values():
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_sampled_survivors(nvcc_jobs, arch):
    kernels, cmd, proc = nvcc_jobs[arch]
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{out[-6000:]}"
    assert {k.settings.letter for k in kernels} == {"d", "z"}
    assert {(k.settings.trans_a, k.settings.trans_b) for k in kernels} == set(TRANS)
    shapes = {(k.layout.mma_m, k.layout.mma_k) for k in kernels}
    assert shapes == ({(8, 4)} if arch == "sm_80" else set(kernel_mma.SHAPES))


def test_nvrtc_compiles_sampled_survivors():
    try:
        from cupy.cuda import nvrtc
        nvrtc.getVersion()
    except Exception as err:           # no CuPy, or no NVRTC library for it
        pytest.skip(f"CuPy's NVRTC is not available: {type(err).__name__}: {err}")
    for arch, kernels in compile_sample().items():
        for k in kernels[::3]:                       # a third of them: NVRTC takes as long as nvcc
            prog = nvrtc.createProgram(k.source, f"{k.name}.cu", (), ())
            try:
                try:
                    nvrtc.compileProgram(prog, (f"-arch={arch}",))
                except nvrtc.NVRTCError as err:
                    pytest.fail(f"NVRTC {arch} {k.settings.routine} {k.layout.config()}: {err}\n"
                                f"{nvrtc.getProgramLog(prog)[-3000:]}")
                assert len(nvrtc.getCUBIN(prog)) > 1000
            finally:
                nvrtc.destroyProgram(prog)


# ------------------------------------------------------------------ the text, run on the CPU

def test_sampled_survivors_run_on_cpu_threads_exactly():
    from beast.tune.sim.hostsim import HostKernels, host_compiler
    if host_compiler() is None:
        pytest.skip("no C++20 host compiler (g++/clang++)")
    rng = np.random.default_rng(5)
    kernels = []
    for i, (arithmetic, (ta, tb)) in enumerate(itertools.product(("real", "complex"), TRANS)):
        st, cfg = pick("a100", settings(arithmetic, ta, tb), rng)
        kernels.append(generate(cfg, st, name=f"host_mma_{i}"))
    for i, (m, k) in enumerate(sorted(s for s in kernel_mma.SHAPES if s[0] == 16)):   # sm_90's shapes
        st, cfg = pick("h100", settings(("real", "complex")[i % 2], i % 2, 1 - i % 2), rng, dict(mma_m=m, mma_k=k))
        kernels.append(generate(cfg, st, name=f"host_mma_h{i}"))
    # broken on purpose: the wait before reading a stage left out (reads a stage before its copies
    # land), and B's fragment read one k-row off (a layout that is not the ISA's)
    good = kernels[0]
    no_wait = kernel_mma.MmaKernel(good.layout, "host_no_wait", good.body.replace("host_mma_0", "host_no_wait")
                                   .replace("beast_cp_async_wait<STAGES - 2>();", ""))
    kernels.append(generate(dict(CFG, stages=5), DNN, name="host_mma_deep"))     # more stages than k-tiles
    saved = dict(B_FRAGMENT)
    try:
        B_FRAGMENT[4] = [1]
        skewed = generate(CFG, DNN, name="host_skewed")
    finally:
        B_FRAGMENT.clear()
        B_FRAGMENT.update(saved)
    with tempfile.TemporaryDirectory() as tmp:
        host = HostKernels(kernels + [no_wait, skewed], workdir=tmp)
        for k in kernels:
            for size in ((37, 45, 29), (5, 3, 0)):           # odd edges, several k-tiles; K = 0: beta*C
                got, exact = host_case(host, k, size, rng)
                assert np.array_equal(got, exact), f"{k.name} {k.settings.routine} {k.layout.config()} {size}"
        for k in (no_wait, skewed):
            got, exact = host_case(host, k, (37, 45, 29), rng)
            assert not np.array_equal(got, exact), k.name
        # a 16-byte copy from a column that is not 16-byte aligned (odd lda) is refused
        vec2 = next(k for k in kernels + [skewed] if k.layout.vec == 2 and not k.settings.trans_a)
        with pytest.raises(BeastError, match="cp.async of 16 bytes from a misaligned address"):
            host_case(host, vec2, (37, 45, 29), rng, ld_multiple=1)
    assert {(k.layout.mma_m, k.layout.mma_k) for k in kernels} == set(kernel_mma.SHAPES)
    assert {k.layout.vec for k in kernels} == {1, 2}
    assert len({k.layout.stages for k in kernels}) >= 2
