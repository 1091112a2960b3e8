"""Registers and spills as compiler facts (beast.tune.model.compiler_facts): ptxas's verbose report parsed
from captured text, the cache (hits, damaged entries), batches of kernels, one real nvcc compile;
and the tensor-core space keeping the best known sm_90 DGEMM designs."""
import json
import re
from pathlib import Path

import pytest

import beast
from beast.errors import BeastError
from beast.tune.model import compiler_facts as cf
from beast.tune.model.compiler_facts import (KernelFacts, kernel_facts, many_kernel_facts, parse_ptxas)
from beast.tune.kernels.mma import generate
from conftest import TESTS as TESTS_DIR

ROOT = Path(TESTS_DIR).parent
MMA = str(ROOT / "spaces" / "gemm_mma.py")
DNN = dict(precision="double", arithmetic="real", trans_a=0, trans_b=0)
SMALL = dict(mma_m=8, mma_k=4, warps_m=1, warps_n=1, warp_m=8, warp_n=8, blk_k=4, stages=2, vec=1,
             pad_a=0, pad_b=0, swizzle=0, frag_buf=1)

# nvcc 13.0 -cubin -Xptxas -v, sm_90: an extern "C" kernel with a local array and static shared
# memory, a non-inlined device function, a template kernel (mangled name)
NVCC13_SM90 = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z2tkILi3EEvPd' for 'sm_90'
ptxas info    : Function properties for _Z2tkILi3EEvPd
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 3.676 ms
ptxas info    : Compiling entry function 'small_k' for 'sm_90'
ptxas info    : Function properties for small_k
    256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 256 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Compile time = 15.457 ms
ptxas info    : Function properties for _Z6helperPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""
# the same for sm_80 with -maxrregcount=16: a warning first, cmem items on the Used line
NVCC13_SM80 = """\
ptxas warning : For profile sm_80 adjusting per thread register count of 16 to lower bound of 24
ptxas info    : Overriding maximum register limit 256 for '_Z2tkILi3EEvPd' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z2tkILi3EEvPd' for 'sm_80'
ptxas info    : Function properties for _Z2tkILi3EEvPd
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 1.811 ms
ptxas info    : Compiling entry function 'small_k' for 'sm_80'
ptxas info    : Function properties for small_k
    256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 256 bytes cumulative stack size, 1024 bytes smem, 364 bytes cmem[0]
"""
# an older ptxas (CUDA 11) with a spilling kernel, CRLF line ends, and a report cut short
OLD_SPILL = ("ptxas info    : Compiling entry function 'big' for 'sm_80'\r\n"
             "ptxas info    : Function properties for big\r\n"
             "    152 bytes stack frame, 148 bytes spill stores, 180 bytes spill loads\r\n"
             "ptxas info    : Used 255 registers, 64 bytes smem, 336 bytes cmem[0]\r\n"
             "ptxas info    : Compiling entry function 'cut' for 'sm_80'\r\n"
             "ptxas info    : Function properties for cut\r\n")


def test_parse_nvcc13_reports():
    got = parse_ptxas(NVCC13_SM90)
    assert got == {
        "_Z2tkILi3EEvPd": KernelFacts(8, 0, 0, 0, 0, "sm_90"),
        "small_k": KernelFacts(40, 0, 0, 256, 1024, "sm_90"),
    }
    got = parse_ptxas(NVCC13_SM80)
    assert got["small_k"] == KernelFacts(32, 0, 0, 256, 1024, "sm_80")
    assert got["_Z2tkILi3EEvPd"].registers == 8 and not got["small_k"].spills


def test_parse_old_format_spills_and_incomplete_reports():
    got = parse_ptxas(OLD_SPILL)
    assert list(got) == ["big"]                               # 'cut' has no Used line: skipped
    big = got["big"]
    assert big == KernelFacts(registers=255, spill_stores=148, spill_loads=180, local_bytes=152, shared_bytes=64,
                              arch="sm_80")
    assert big.spills
    assert parse_ptxas("nvcc warning : nothing compiled\n") == {}


def _fake_compiler(monkeypatch, calls):
    """nvcc stand-in: a report line set per extern "C" kernel in the source, registers = 10 + its index."""
    monkeypatch.setattr(cf, "compiler", lambda: ("nvcc", "fake nvcc 1.0"))

    def compile_(source, arch, kind):
        calls.append(source)
        names = re.findall(r"__launch_bounds__\(NT\)\n(\w+)\(", source)
        return "".join(f"ptxas info    : Compiling entry function '{n}' for '{arch}'\n"
                       f"ptxas info    : Function properties for {n}\n"
                       f"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                       f"ptxas info    : Used {10 + i} registers, used 1 barriers\n" for i, n in enumerate(names))
    monkeypatch.setattr(cf, "_compile", compile_)


def _kernels(n):
    return [generate(dict(SMALL, stages=2 + i % 4, pad_a=2 * (i // 4)), DNN) for i in range(n)]


def test_batches_cache_and_damaged_entries(monkeypatch, tmp_path):
    monkeypatch.setenv("BEAST_CACHE_DIR", str(tmp_path))
    calls = []
    _fake_compiler(monkeypatch, calls)
    ks = _kernels(6)
    got = many_kernel_facts(ks + ks[:2], "sm_90", workers=2)          # duplicates compile once
    assert len(calls) == 2 and all(s.count("__global__") == 3 for s in calls)   # two batches of three
    regs = [f.registers for f in got]
    assert regs[6:] == regs[:2] and len(set(regs[:6])) == 3           # each batch numbers its own from 10
    calls.clear()
    assert many_kernel_facts(ks, "sm_90") == got[:6] and calls == []  # all from the cache
    assert len(list((tmp_path / "facts").iterdir())) == 6
    entry = [Path(cf._path(cf._key(k, "sm_90", "fake nvcc 1.0"))) for k in ks]
    entry[0].write_text("{not json")
    entry[1].write_text(json.dumps({"key": "other"}))
    entry[2].write_text(json.dumps(dict(json.loads(entry[2].read_text()), registers=-3)))
    again = many_kernel_facts(ks, "sm_90", workers=1)
    assert len(calls) == 1 and calls[0].count("__global__") == 3       # the three recomputed, together
    assert again[3:] == got[3:6] and [f.registers for f in again[:3]] == [10, 11, 12]
    assert json.loads(entry[2].read_text())["registers"] == 12          # and stored again


def test_refusals(monkeypatch):
    with pytest.raises(BeastError, match="sm_XY"):
        many_kernel_facts(_kernels(1), "compute_90")
    monkeypatch.setattr(cf, "find_nvcc", lambda: None)
    monkeypatch.setattr(cf, "_nvrtc", lambda: None)
    with pytest.raises(BeastError, match="no CUDA compiler") as err:
        kernel_facts(_kernels(1)[0])
    assert "nvcc" in err.value.hint and "CuPy" in err.value.hint


def test_a_failing_batch_names_its_kernel(monkeypatch, tmp_path):
    monkeypatch.setenv("BEAST_CACHE_DIR", str(tmp_path))
    calls = []
    _fake_compiler(monkeypatch, calls)
    fake = cf._compile
    ks = _kernels(3)

    def compile_(source, arch, kind):                   # a batch fails, and ks[1] alone
        if source.count("__global__") > 1 or source == ks[1].source:
            calls.append(source)
            raise BeastError("nvcc failed for sm_90 (exit 1):\nerror: something")
        return fake(source, arch, kind)
    monkeypatch.setattr(cf, "_compile", compile_)
    with pytest.raises(BeastError, match=r"kernel beast_gemm_mma \(mma_m=8, .*stages=3, .*nvcc failed"):
        many_kernel_facts(ks, "sm_90", workers=1)
    assert calls[-1] == ks[1].source                     # the batch failed, then ks[1] alone
    assert [f.registers for f in many_kernel_facts([ks[0], ks[2]], "sm_90", workers=1)] == [10, 10]


def test_nvrtc_when_there_is_no_nvcc(monkeypatch, tmp_path):
    monkeypatch.setenv("BEAST_CACHE_DIR", str(tmp_path))
    seen = {}

    class FakeNvrtc:                                    # the calls cupy.cuda.nvrtc offers
        class NVRTCError(Exception):
            pass

        @staticmethod
        def getVersion():
            return (12, 9)

        @staticmethod
        def createProgram(source, name, headers, names):
            seen["source"] = source
            return 7

        @staticmethod
        def compileProgram(prog, options):
            seen["options"] = options

        @staticmethod
        def getProgramLog(prog):
            name = re.findall(r"__launch_bounds__\(NT\)\n(\w+)\(", seen["source"])[0]
            return NVCC13_SM90.replace("small_k", name)

        @staticmethod
        def destroyProgram(prog):
            seen["destroyed"] = prog

    monkeypatch.setattr(cf, "find_nvcc", lambda: None)
    monkeypatch.setattr(cf, "_nvrtc", lambda: FakeNvrtc)
    k = _kernels(1)[0]
    assert cf.compiler() == ("nvrtc", "nvrtc 12.9")
    assert kernel_facts(k, "sm_90") == KernelFacts(40, 0, 0, 256, 1024, "sm_90")
    assert seen["options"] == ("-arch=sm_90", "--ptxas-options=-v") and seen["destroyed"] == 7
    with pytest.raises(BeastError, match="not a generated kernel"):
        kernel_facts("beast_gemm_mma")


@pytest.mark.skipif(cf.find_nvcc() is None, reason="nvcc not found")
def test_nvcc_facts_of_a_small_kernel():
    k = generate(SMALL, DNN)
    f = kernel_facts(k, "sm_90")                  # one compile; the session's cache keeps it
    assert f.arch == "sm_90" and 24 <= f.registers <= 128
    assert not f.spills and f.local_bytes == 0 and f.shared_bytes == 0   # the stages are dynamic
    floor = beast.load(MMA, device="h100").module.namespace["REG_FLOOR"]
    assert 2 * 8 * 8 // 32 + 2 * (8 * 4 + 8 * 4) // 32 + floor <= f.registers   # the space's lower bound holds
    assert kernel_facts(k, "sm_90") is not f and kernel_facts(k, "sm_90") == f
    path = Path(cf._path(cf._key(k, "sm_90", cf.compiler()[1])))
    assert path.exists() and json.loads(path.read_text())["registers"] == f.registers


#: sm_90 DGEMM designs the register bound must keep: NVIDIA's own (cuBLAS kernel
#: tilesize128x128x16_stage3_warpsize4x2x1_tensor16x8x16), CUTLASS 3's default (128 x 64 x 16,
#: 2 x 2 warps, 3 stages) and a 128 x 128 block with blk_k = 32; 16-byte copies, rows padded by 2.
BEST = {
    "nvidia": dict(mma_m=16, mma_k=16, warps_m=4, warps_n=2, warp_m=32, warp_n=64, blk_k=16, stages=3),
    "cutlass3": dict(mma_m=16, mma_k=16, warps_m=2, warps_n=2, warp_m=64, warp_n=32, blk_k=16, stages=3),
    "128x128x32": dict(mma_m=16, mma_k=16, warps_m=4, warps_n=2, warp_m=32, warp_n=64, blk_k=32, stages=3),
}
#: values for the iterators these configurations do not name (the plain kernel)
PLAIN = dict(vec=2, pad_a=2, pad_b=2, swizzle=0, frag_buf=1)


@pytest.mark.parametrize("device", ["h100", "h200"])
def test_best_sm90_designs_survive(device):
    space = beast.load(MMA, device=device, settings=DNN)
    for name, cfg in BEST.items():
        full = {n: cfg.get(n, PLAIN.get(n)) for n in space.iterators}
        assert space.contains(full, backend="python"), (device, name, full)
