"""The generated CUDA GEMM kernel: its text, nvcc compiling a sample of survivors of every
precision and transpose (split between an old and a new architecture, each getting every
precision and every transpose pair), and the very text run on CPU
threads (g++) against NumPy and against the emulation."""
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
from beast.lang.devices import resolve_device
from beast.errors import BeastError
from beast.tune.sim.emulate import emulate_gemm
from beast.tune.device.gpu import check_launch_rules, gpu_available, ld_multiple, require_gpu
from beast.tune.kernels.paper import (KERNEL_NAME, GemmLayout, GemmSettings, generate, translation_unit)
from conftest import host_case
from conftest import TESTS as TESTS_DIR

GEMM = str(Path(TESTS_DIR).parent / "spaces" / "gemm.py")
ALL_SETTINGS = [dict(precision=p, arithmetic=a, trans_a=ta, trans_b=tb)
                for p, a, ta, tb in itertools.product(("single", "double"), ("real", "complex"), (0, 1), (0, 1))]
CFG = dict(dim_m=16, dim_n=16, blk_m=64, blk_n=64, blk_k=16, dim_vec=2, vec_mul=1, dim_m_a=16, dim_n_a=16,
           dim_m_b=8, dim_n_b=32, tex_a=1, tex_b=0, shmem_l1=1, shmem_banks=0)
DNN = dict(precision="double", arithmetic="real", trans_a=0, trans_b=0)


def sample_survivors(device, per_setting=1, seed=0):
    """(settings, config) pairs: per precision/arithmetic/transpose, survivors with the widest
    dim_vec (vec_mul alternating between settings), then random ones."""
    rng = np.random.default_rng(seed)
    out = []
    for i, st in enumerate(ALL_SETTINGS):
        space = beast.load(GEMM, device=device, settings=st)
        rows = space.enumerate(backend="python")    # a few hundred rows: auto would build C for each
        wide = rows[(rows["dim_vec"] == rows["dim_vec"].max()) & (rows["vec_mul"] == i % 2)]
        picks = [wide[rng.integers(len(wide))]] if len(wide) else []
        while len(picks) < per_setting:
            picks.append(rows[rng.integers(len(rows))])
        for row in picks:
            out.append((space.settings, {n: int(row[n]) for n in space.iterators}))
    return out


# ------------------------------------------------------------------ the text

def test_generation_is_deterministic():
    a = generate(CFG, DNN)
    b = generate(dict(reversed(list(CFG.items()))), DNN)
    assert a.source == b.source and a.source_hash == b.source_hash
    assert f'extern "C" __global__ void __launch_bounds__(NT)\n{KERNEL_NAME}(' in a.source


#: sha256 of the sources of 32 sampled survivors (below): the paper's kernel text, which logs of
#: reproduced results were measured with.  A change here must bump KERNEL_VERSION.
PAPER_TEXT = "c40a490aa389727aef4eb725a5948c644cc9530de6a156716515224556f8908f"


def test_the_papers_kernel_text_is_unchanged():
    import hashlib
    device = resolve_device("k40c").replace(**SMALL)
    h = hashlib.sha256()
    for i, (st, cfg) in enumerate(sample_survivors(device, per_setting=2, seed=7)):
        h.update(generate(cfg, st, name=f"g{i}").source.encode())
    assert h.hexdigest() == PAPER_TEXT


def test_parameters_become_constants():
    src = generate(CFG, DNN).source
    for name, value in CFG.items():
        if name in ("shmem_l1", "shmem_banks"):
            continue                                    # host side: launch attributes
        assert re.search(rf"\b{name.upper()} = {value}\b", src), name
    assert "typedef double T;" in src


def test_parameters_are_read_by_name_and_missing_ones_reported_together():
    cfg = {k: v for k, v in CFG.items() if k not in ("blk_k", "dim_m_b", "shmem_banks")}
    cfg["unrelated"] = 3
    with pytest.raises(BeastError) as err:
        generate(cfg, DNN)
    msg = str(err.value)
    assert "blk_k, dim_m_b, shmem_banks" in msg
    assert set(GemmLayout.required_names()) == set(CFG)


def test_settings_are_checked():
    with pytest.raises(BeastError, match="trans_b"):
        generate(CFG, dict(precision="double", arithmetic="real", trans_a=0))
    with pytest.raises(BeastError, match="precision='half'"):
        generate(CFG, dict(DNN, precision="half"))
    with pytest.raises(BeastError, match="not an integer"):
        generate(dict(CFG, blk_k=2.5), DNN)


def test_unsupported_vector_width():
    with pytest.raises(BeastError, match="dim_vec=2 has no CUDA vector type for double2"):
        generate(CFG, dict(DNN, arithmetic="complex"))
    with pytest.raises(BeastError, match="dim_vec=3"):
        generate(dict(CFG, dim_vec=3), dict(DNN, precision="single"))


def test_host_side_parameters_do_not_change_the_binary():
    a = generate(CFG, DNN)
    b = generate(dict(CFG, shmem_l1=0, shmem_banks=1), DNN)
    assert a.source_hash == b.source_hash
    assert (a.layout.carveout, b.layout.carveout) == (100, 0)
    assert (a.layout.bank_size_bytes, b.layout.bank_size_bytes) == (4, 8)


def test_read_only_path_and_vector_types():
    src = generate(CFG, DNN).source                         # tex_a = 1, tex_b = 0
    assert "const T* __restrict__ A" in src and "const T* B" in src
    assert "BEAST_LDG(reinterpret_cast<const double2*>(p))" in src
    assert "*reinterpret_cast<const double2*>(p)" in src     # B: plain vector load
    src = generate(dict(CFG, dim_vec=4, dim_m_a=4, dim_m_b=4, dim_n_b=64, blk_k=64, tex_b=1),
                   dict(DNN, precision="single")).source
    assert "float4" in src and "__restrict__ B" in src
    src = generate(CFG, dict(DNN, precision="single", arithmetic="complex")).source
    assert "beast_c2f(v.z, v.w)" in src                      # two complex numbers per float4
    src = generate(dict(CFG, vec_mul=0), DNN).source
    assert "VEC_A = 1, VEC_B = 1" in src


def test_launch_geometry():
    k = generate(CFG, DNN)
    assert k.block == (16, 16, 1)
    assert k.grid(1000, 129) == (16, 3, 1)
    assert k.smem_bytes == 16 * (64 + 64) * 8
    big = generate(dict(CFG, blk_k=64, dim_n_a=64 // 4, dim_m_a=16, dim_m_b=32, dim_n_b=8), DNN)
    assert big.smem_bytes == 64 * 128 * 8 > 48 * 1024     # needs the opt-in attribute


def test_launch_rules():
    k = generate(CFG, DNN)                                  # dim_vec = 2
    assert check_launch_rules(k, 100, 100, 100, 100, 100, 100) is None
    assert "multiples of 2" in check_launch_rules(k, 99, 100, 100, 99, 100, 99)
    assert "aligned to 16 bytes" in check_launch_rules(k, 100, 100, 100, 100, 100, 100, (256, 8))
    assert "exceeds 65535" in check_launch_rules(k, 64, 64 * 65536, 8, 64, 8, 64)
    assert ld_multiple(GemmSettings.from_mapping(DNN)) == 2


def test_no_gpu_here_is_reported_clearly():
    if gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(BeastError) as err:
        require_gpu()
    assert str(err.value).startswith("error: no GPU found")


# ------------------------------------------------------------------ nvcc

def _nvcc():
    return shutil.which("nvcc") or (os.path.exists("/usr/local/cuda/bin/nvcc") and "/usr/local/cuda/bin/nvcc") or None


def _archs():
    """sm_70 and sm_90; nvcc 13 dropped sm_70, then its oldest architecture stands in for it."""
    nvcc = _nvcc()
    if not nvcc:
        return ["sm_70", "sm_90"]
    try:
        listed = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, timeout=60).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return ["sm_70", "sm_90"]
    sms = sorted((s for s in listed if re.fullmatch(r"sm_\d+", s)), key=lambda s: int(s[3:]))
    old = "sm_70" if "sm_70" in sms or not sms else sms[0]
    return [old, "sm_90"]


def _half(i: int) -> int:
    """Which architecture compiles the kernel of ALL_SETTINGS[i]: (letter + transpose pair) mod
    2, so that each one gets every letter and every transpose pair (the text has no
    architecture-dependent part; each setting is compiled once, the pairs cover both halves)."""
    letter, trans = divmod(i, 4)
    return (letter + trans) % 2


@pytest.fixture(scope="module")
def nvcc_jobs(tmp_path_factory):
    """Start one nvcc per architecture (in parallel), each on a translation unit of 8 of the 16
    survivors (one per precision/arithmetic/transpose, split by :func:`_half`)."""
    nvcc = _nvcc()
    if not nvcc:
        pytest.skip("nvcc not found: cannot compile the generated kernels")
    device = resolve_device("h100").replace(max_threads_dim_x=32, max_threads_dim_y=32)
    kernels = [generate(cfg, st, name=f"gemm_{i}") for i, (st, cfg) in enumerate(sample_survivors(device))]
    tmp = tmp_path_factory.mktemp("nvcc")
    jobs = {}
    for half, arch in enumerate(_archs()):
        mine = [k for i, k in enumerate(kernels) if _half(i) == half]
        src = tmp / f"sample_{arch}.cu"
        src.write_text(translation_unit(mine))
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-Werror", "all-warnings", str(src),
               "-o", str(src.with_suffix(".cubin"))]
        jobs[arch] = (cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), mine)
    yield kernels, jobs
    for _, proc, _ in jobs.values():
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("arch_index", [0, 1], ids=_archs())
def test_nvcc_compiles_sample_of_every_precision(nvcc_jobs, arch_index):
    kernels, jobs = nvcc_jobs
    arch = list(jobs)[arch_index]
    cmd, proc, mine = jobs[arch]
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{out[-6000:]}"
    assert len(mine) == 8 and {k.settings.letter for k in mine} == {"s", "d", "c", "z"}
    assert {(k.settings.trans_a, k.settings.trans_b) for k in mine} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    letters = {k.settings.letter for k in kernels}
    assert letters == {"s", "d", "c", "z"}
    assert {(k.settings.trans_a, k.settings.trans_b) for k in kernels} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert {k.layout.dim_vec for k in kernels} >= {1, 2, 4}
    assert {k.layout.tex_a for k in kernels} == {0, 1} and {k.layout.vec_mul for k in kernels} == {0, 1}


# ------------------------------------------------------------------ the text, run on the CPU

SMALL = dict(max_threads_per_block=64, max_threads_dim_x=16, max_threads_dim_y=16, warp_size=4,
             max_shared_mem_per_block=2048, max_shmem_per_multi_processor=16384)


def test_generated_text_runs_on_cpu_threads_and_matches_emulation():
    from beast.tune.sim.hostsim import HostKernels, host_compiler
    if host_compiler() is None:
        pytest.skip("no C++20 host compiler (g++/clang++)")
    device = resolve_device("k40c").replace(**SMALL)
    pairs = sample_survivors(device, per_setting=2, seed=7)
    kernels = [generate(cfg, st, name=f"host_gemm_{i}") for i, (st, cfg) in enumerate(pairs)]
    # and two that break Fig. 15: a reading grid larger than the block leaves rows unloaded
    bad_cfg = dict(dim_m=4, dim_n=4, blk_m=8, blk_n=8, blk_k=8, dim_vec=1, vec_mul=0, dim_m_a=4,
                   dim_n_a=8, dim_m_b=4, dim_n_b=4, tex_a=0, tex_b=1, shmem_l1=0, shmem_banks=0)
    bad = [generate(bad_cfg, DNN, name="host_bad_0"),
           generate(dict(bad_cfg, dim_m_a=8, dim_n_a=4, dim_m_b=2, dim_n_b=16), dict(DNN, trans_b=1),
                    name="host_bad_1")]
    with tempfile.TemporaryDirectory() as tmp:
        host = HostKernels(kernels + bad, workdir=tmp)
        rng = np.random.default_rng(3)
        for k in kernels + bad:
            st = k.settings
            L = k.layout
            m, n, kk = 2 * L.blk_m - 1, 2 * L.blk_n + 3, 2 * L.blk_k + 1
            got, exact = host_case(host, k, (m, n, kk), rng)
            emulated = emulate_gemm(L.config(), st, (m, n, kk))
            if k in bad:
                assert not np.array_equal(got, exact) and not emulated.ok
            else:
                assert np.array_equal(got, exact), f"{k.name} {st.routine} {L.config()}"
                assert emulated.ok
