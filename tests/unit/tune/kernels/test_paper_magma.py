"""The paper's template with MAGMA's switches (spaces/gemm_magma.py): shared-memory
padding, two shared-memory buffers, cp.async.  The paper's own text is unchanged; the switched
kernels compile (nvcc, NVRTC) for sm_80 and sm_90 and run exactly on CPU threads."""
import functools
import itertools
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.lang.devices import resolve_device
from beast.errors import BeastError
from beast.tune.sim.emulate import emulate_gemm
from beast.tune.kernels.families import family_of
from beast.tune.kernels.paper import GemmKernel, generate, translation_unit
from conftest import host_case
from conftest import TESTS as TESTS_DIR

ROOT = Path(TESTS_DIR).parent
MAGMA = str(ROOT / "spaces" / "gemm_magma.py")
GEMM = str(ROOT / "spaces" / "gemm.py")
SMALL = dict(max_threads_per_block=64, max_threads_dim_x=16, max_threads_dim_y=16, warp_size=4,
             max_shared_mem_per_block=2048, max_shmem_per_multi_processor=16384)
#: compute capability 8.0 (cp.async) scaled down: small blocks, 4 KB of opt-in shared memory
DEVICE = resolve_device("a100").replace(**SMALL, max_shared_mem_per_block_optin=4096)
CFG = dict(dim_m=16, dim_n=16, blk_m=64, blk_n=64, blk_k=16, dim_vec=2, vec_mul=1, dim_m_a=16, dim_n_a=16,
           dim_m_b=8, dim_n_b=32, tex_a=1, tex_b=0, shmem_l1=1, shmem_banks=0)
DNN = dict(precision="double", arithmetic="real", trans_a=0, trans_b=0)
VARIANTS = ((1, 0), (2, 0), (2, 1))                     # (smem_buffers, async_copy)


@functools.lru_cache(maxsize=None)
def _survivors(settings: tuple):
    """(space, rows) of the MAGMA space for these settings, enumerated once per module."""
    space = beast.load(MAGMA, device=DEVICE, settings=dict(settings))
    return space, space.enumerate(backend="lua")   # 9,337 rows each: 0.06 s in Lua, a C build each under auto


def sample(seed=0):
    """Per precision, arithmetic and transpose: one survivor of each pipeline (one buffer, two,
    two with cp.async), padded where the space pads."""
    rng = np.random.default_rng(seed)
    out = []
    for p, a, ta, tb in itertools.product(("single", "double"), ("real", "complex"), (0, 1), (0, 1)):
        space, rows = _survivors((("precision", p), ("arithmetic", a), ("trans_a", ta), ("trans_b", tb)))
        for buffers, copy in VARIANTS:
            sel = rows[(rows["smem_buffers"] == buffers) & (rows["async_copy"] == copy)]
            padded = sel[(sel["pad_a"] > 0) | (sel["pad_b"] > 0)]
            pool = padded if len(padded) else sel
            row = pool[rng.integers(len(pool))]
            cfg = {n: int(row[n]) for n in space.iterators}
            out.append(generate(cfg, space.settings, name=f"magma_{len(out)}"))
    return out


def test_space_adds_to_the_papers():
    paper = beast.load(GEMM, device=DEVICE).count()
    space = beast.load(MAGMA, device=DEVICE)
    assert space.count() > paper                           # three pipelines, paddings (more shared memory)
    rows = space.enumerate()
    plain = rows[(rows["pad_a"] == 0) & (rows["pad_b"] == 0) & (rows["smem_buffers"] == 1)]
    assert len(plain) == paper                              # the switches off: the paper's space
    assert not np.any((rows["async_copy"] == 1) & (rows["smem_buffers"] == 1))
    assert not np.any(rows["pad_a"] > 0)                    # NN: A's stripe is stored as it lies
    k40c = beast.load(MAGMA, device=resolve_device("k40c").replace(**SMALL)).enumerate()
    assert len(k40c) and not np.any(k40c["async_copy"] == 1)   # no cp.async before 8.0
    assert family_of(space).name == "gemm"


def test_paper_configurations_keep_their_text():
    plain = generate(CFG, DNN)
    off = generate(dict(CFG, pad_a=0, pad_b=0, smem_buffers=1, async_copy=0), DNN)
    assert off.source == plain.source and not off.layout.extended and off.layout.config() == CFG
    assert "cp.async" not in plain.source and "LDA_S" not in plain.source


def test_switches_change_the_kernel():
    padded = generate(dict(CFG, pad_b=2), DNN)
    assert "LDB_S = BLK_N + PAD_B" in padded.body and "k * LDB_S" in padded.body
    assert padded.layout.smem_bytes == 16 * (64 + 64 + 2) * 8 and padded.layout.config()["pad_b"] == 2
    two = generate(dict(CFG, smem_buffers=2), DNN)
    assert two.layout.smem_bytes == 2 * 16 * 128 * 8 and two.body.count("__syncthreads();") == 1
    copy = generate(dict(CFG, smem_buffers=2, async_copy=1), DNN)
    assert "beast_cp_async<16>" in copy.body and "beast_cp_async<8>" in copy.body   # A by vectors, B by elements
    assert "T ra[" not in copy.body
    for cfg, message in ((dict(CFG, async_copy=1), "needs smem_buffers=2"),
                         (dict(CFG, pad_a=1), "not a multiple of dim_vec=2"),
                         (dict(CFG, smem_buffers=3), "must be 1 or 2")):
        with pytest.raises(BeastError, match=message):
            generate(cfg, DNN)
    with pytest.raises(BeastError, match="does not model pad_a"):
        emulate_gemm(dict(CFG, pad_b=2), DNN)


def _nvcc():
    return shutil.which("nvcc")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_the_switched_sample(arch, tmp_path):
    nvcc = _nvcc()
    if not nvcc:
        pytest.skip("nvcc not found: cannot compile the generated kernels")
    kernels = sample(seed=3)[::5]                          # 10 of 48: every pipeline and type
    src = tmp_path / "magma.cu"
    src.write_text(translation_unit(kernels))
    proc = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-Werror", "all-warnings", str(src),
                           "-o", str(tmp_path / "magma.cubin")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    assert {(k.layout.smem_buffers, k.layout.async_copy) for k in kernels} == set(VARIANTS)
    assert {k.settings.letter for k in kernels} == {"s", "d", "c", "z"}


def test_nvrtc_compiles_cp_async():
    try:
        from cupy.cuda import nvrtc
        nvrtc.getVersion()
    except Exception as err:           # no CuPy, or no NVRTC library for it
        pytest.skip(f"CuPy's NVRTC is not available: {type(err).__name__}: {err}")
    for k in [k for k in sample(seed=4) if k.layout.async_copy][:4]:
        prog = nvrtc.createProgram(k.source, f"{k.name}.cu", (), ())
        try:
            nvrtc.compileProgram(prog, ("-arch=sm_80",))
        except nvrtc.NVRTCError as err:
            pytest.fail(f"NVRTC {k.settings.routine} {k.layout.config()}: {err}\n{nvrtc.getProgramLog(prog)[-3000:]}")
        finally:
            nvrtc.destroyProgram(prog)


def pairwise(kernels):
    """Of :func:`sample`'s 48 (16 settings x 3 pipelines), the 16 where pipeline = (letter +
    transpose pair) mod 3: every pipeline with every letter and with every transpose pair."""
    out = []
    for i, k in enumerate(kernels):
        setting, pipeline = divmod(i, len(VARIANTS))
        letter, trans = divmod(setting, 4)
        if pipeline == (letter + trans) % len(VARIANTS):
            out.append(k)
    return out


def test_switched_kernels_run_on_cpu_threads_exactly():
    from beast.tune.sim.hostsim import HostKernels, host_compiler
    if host_compiler() is None:
        pytest.skip("no C++20 host compiler (g++/clang++)")
    kernels = pairwise(sample(seed=1))
    pipelines = {(k.layout.smem_buffers, k.layout.async_copy) for k in kernels}
    assert len(kernels) == 16 and pipelines == set(VARIANTS)
    for v in VARIANTS:
        mine = [k for k in kernels if (k.layout.smem_buffers, k.layout.async_copy) == v]
        assert {k.settings.letter for k in mine} == {"s", "d", "c", "z"}
        assert {(k.settings.trans_a, k.settings.trans_b) for k in mine} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    # broken on purpose: cp.async without waiting for the stripe before reading it
    copy = next(k for k in kernels if k.layout.async_copy)
    no_wait = GemmKernel(copy.layout, "magma_no_wait", copy.body.replace(copy.name, "magma_no_wait")
                         .replace("beast_cp_async_wait<0>();", ""))
    rng = np.random.default_rng(2)
    with tempfile.TemporaryDirectory() as tmp:
        host = HostKernels(kernels + [no_wait], workdir=tmp)
        for k in kernels + [no_wait]:
            st, L = k.settings, k.layout
            m, n, kk = 2 * L.blk_m - 1, 2 * L.blk_n + 3, 2 * L.blk_k + 1
            got, exact = host_case(host, k, (m, n, kk), rng)
            if k is no_wait:
                assert not np.array_equal(got, exact)
            else:
                assert np.array_equal(got, exact), f"{k.name} {st.routine} {L.config()}"
    assert any(k.layout.pad_a or k.layout.pad_b for k in kernels)
