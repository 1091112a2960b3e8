"""Run generated GEMM kernels on the CPU: the CUDA text compiled by a C++20 host compiler.

For testing without a GPU.  A small header maps the few CUDA constructs the template uses
(``threadIdx``, ``blockIdx``, ``__syncthreads``, dynamic shared memory, ``__ldg``, vector types)
onto host C++: every thread of a block is a fiber (``ucontext``) with a stack of its own, the
block's fibers take turns on one OS thread, each running until it waits at ``__syncthreads``
(or a warp's barrier) or returns, blocks run one after another, and shared memory starts filled
with 0xff bytes (NaN for float and double) so that reading an element no thread stored shows.
Taking turns is deterministic, and a thread that reads shared memory before the barrier that
should have waited for its writers reads what is not there yet (the 0xff bytes) every time;
a barrier that not every thread of the block reaches is reported, not waited on forever.  The
kernels are the very text :func:`beast.tune.kernels.paper.generate` produces; only the prelude's
``BEAST_DYNAMIC_SMEM``/``BEAST_LDG`` hooks are predefined.

The tensor-core kernels of :mod:`beast.tune.kernels.mma`, and the paper's with ``async_copy``, run
too: the shim defines their hooks (``BEAST_HOST_SIM``).  ``beast_mma_m{8,16}n8k{4,8,16}`` is a
warp-level MMA: the 32 threads of a warp meet at a barrier of their own, each gathers the whole
A, B and C from every lane's fragments by the PTX ISA's fragment layouts (checking that they
cover each matrix once) and computes its own elements of D.  ``cp.async`` copies (with their zero-fill) are queued per
commit group and land at the ``cp.async.wait_group`` that covers them, the latest moment the
hardware allows; a misaligned copy, or one outside the block's shared memory, is an error that
:meth:`HostModule.launch` raises.

The shim's standard headers are compiled once per compiler into a precompiled header in beast's
cache (:func:`precompiled_shim`), which halves each kernel's host compile.

Counting (:mod:`beast.tune.sim.counters`): built with ``counting=True`` (``BEAST_HOST_COUNT``, a
precompiled header of its own), every hook also records an event in its thread's trace:
``BEAST_LDS`` fragment loads (the shim defines the macro as a function that records ``&x`` and
returns ``x``), ``cp.async`` copies, warp MMAs and ``__syncthreads``; ``beast_host_count_*``
read the traces back.  The ordinary build compiles none of it.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from typing import Sequence

import numpy as np

from ...errors import BeastError

from ..kernels.paper import GemmKernel, translation_unit

HOST_SHIM = r"""
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <sys/mman.h>
#include <ucontext.h>
using std::fma; using std::fmaf;
struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
thread_local unsigned char* beast_host_smem;

// The threads of a block are fibers that take turns (beast_host_launch): a fiber runs until it
// waits at a barrier (it yields back to the launcher until the barrier opens) or returns.
struct beast_host_copy { unsigned char* dst; const unsigned char* src; int bytes, src_bytes; };
struct beast_host_fiber {
  ucontext_t ctx;
  bool done = false;
  std::vector<beast_host_copy> open;                   // cp.async issued, not committed
  std::deque<std::vector<beast_host_copy>> groups;     // committed, not landed
};
thread_local ucontext_t beast_host_turns;               // the launcher's context
thread_local beast_host_fiber* beast_host_me;
thread_local unsigned long long beast_host_progress;    // arrivals at barriers and threads ended
inline void beast_host_yield() { swapcontext(&beast_host_me->ctx, &beast_host_turns); }
struct beast_host_bar {
  explicit beast_host_bar(int n) : n(n) {}
  int n, count = 0;
  unsigned long long generation = 0;
  void arrive_and_wait() {
    ++beast_host_progress;
    const unsigned long long mine = generation;
    if (++count == n) { count = 0; ++generation; return; }
    while (generation == mine) beast_host_yield();
  }
};
thread_local beast_host_bar* beast_host_barrier;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#ifndef BEAST_HOST_COUNT
#define __syncthreads() beast_host_barrier->arrive_and_wait()
#else   // counting (beast.tune.sim.counters): each barrier is an event of the thread's trace
#define __syncthreads() \
  (beast_host_note(beast_host_ev_bar, nullptr, 0, nullptr, 0), beast_host_barrier->arrive_and_wait())
#endif
#define BEAST_DYNAMIC_SMEM(name) unsigned char* name = beast_host_smem
#define BEAST_LDG(p) (*(p))

// The first error a kernel made (a misaligned cp.async, a fragment not covered): reported by the launcher.
static std::mutex beast_host_error_lock;
static std::string beast_host_error;
static void beast_host_fail(const std::string& what) {
  std::lock_guard<std::mutex> hold(beast_host_error_lock);
  if (beast_host_error.empty()) beast_host_error = what;
}
extern "C" const char* beast_host_last_error() { return beast_host_error.c_str(); }
extern "C" void beast_host_clear_error() { beast_host_error.clear(); }

// ---- the hooks of cp.async (beast.tune.kernels.paper.CP_ASYNC) and of the warp MMAs (beast.tune.kernels.mma)
#define BEAST_HOST_SIM 1
thread_local size_t beast_host_smem_bytes;
#ifdef BEAST_HOST_COUNT
// Counting (beast.tune.sim.counters, a build with BEAST_HOST_COUNT): every thread keeps a trace of
// the events of the hooks, in its program order: shared-memory fragment loads (BEAST_LDS: the
// offset in shared memory and the width), cp.async copies (destination offset, width, source
// address and source bytes), warp MMAs and barriers.  Python reads the traces after a launch.
struct beast_host_event { unsigned long long addr, src; int kind, bytes, src_bytes, pad; };
enum : int { beast_host_ev_lds = 1, beast_host_ev_cp = 2, beast_host_ev_mma = 3, beast_host_ev_bar = 4 };
thread_local std::vector<std::vector<beast_host_event>> beast_host_traces;   // by linear thread index
inline void beast_host_note(int kind, const void* addr, int bytes, const void* src, int src_bytes) {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  if (beast_host_traces.size() <= t) beast_host_traces.resize(t + 1);
  const unsigned long long off = addr ? static_cast<unsigned long long>(
      static_cast<const unsigned char*>(addr) - beast_host_smem) : 0;
  beast_host_traces[t].push_back({off, static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(src)),
                                  kind, bytes, src_bytes, 0});
}
template <class T> inline const T& beast_host_lds(const T& x) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(&x);
  if (p < beast_host_smem || p + sizeof(T) > beast_host_smem + beast_host_smem_bytes)
    beast_host_fail("BEAST_LDS of an address outside the block's dynamic shared memory");
  else
    beast_host_note(beast_host_ev_lds, p, static_cast<int>(sizeof(T)), nullptr, 0);
  return x;
}
#define BEAST_LDS(x) beast_host_lds(x)
extern "C" void beast_host_count_clear() { beast_host_traces.clear(); }
extern "C" unsigned long long beast_host_count_threads() { return beast_host_traces.size(); }
extern "C" unsigned long long beast_host_count_size(unsigned t) {
  return t < beast_host_traces.size() ? beast_host_traces[t].size() : 0;
}
extern "C" const beast_host_event* beast_host_count_events(unsigned t) {
  return t < beast_host_traces.size() ? beast_host_traces[t].data() : nullptr;
}
#endif
// cp.async: a copy may land any time before the wait_group that covers it; here it lands at that
// wait (the latest moment), so a kernel that reads a stage before waiting for it reads stale data.
template <int BYTES> inline void beast_cp_async(void* dst, const void* src, int src_bytes) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  unsigned char* d = static_cast<unsigned char*>(dst);
  if (reinterpret_cast<std::uintptr_t>(dst) % BYTES || (src_bytes > 0 && reinterpret_cast<std::uintptr_t>(src) % BYTES))
    beast_host_fail("cp.async of " + std::to_string(BYTES) + " bytes from a misaligned address");
  else if (src_bytes < 0 || src_bytes > BYTES)
    beast_host_fail("cp.async src-size " + std::to_string(src_bytes) + " outside 0.." + std::to_string(BYTES));
  else if (d < beast_host_smem || d + BYTES > beast_host_smem + beast_host_smem_bytes)
    beast_host_fail("cp.async writes outside the block's dynamic shared memory");
  else
#ifdef BEAST_HOST_COUNT
    beast_host_note(beast_host_ev_cp, d, BYTES, src, src_bytes),
#endif
    beast_host_me->open.push_back({d, static_cast<const unsigned char*>(src), BYTES, src_bytes});
}
inline void beast_cp_async_commit() {
  beast_host_me->groups.push_back(std::move(beast_host_me->open));
  beast_host_me->open.clear();
}
template <int N> inline void beast_cp_async_wait() {
  auto& groups = beast_host_me->groups;
  while (groups.size() > static_cast<size_t>(N)) {
    for (const beast_host_copy& c : groups.front()) {
      std::memcpy(c.dst, c.src, c.src_bytes);
      std::memset(c.dst + c.src_bytes, 0, c.bytes - c.src_bytes);
    }
    groups.pop_front();
  }
}

// Warp-level f64 MMA: each of the 32 lanes puts its fragments in the warp's scratch, a warp
// barrier, every lane gathers the whole A, B and C by the PTX ISA's fragment layouts and computes
// its own D elements, and a second barrier lets the scratch be reused.
struct beast_host_warp {
  explicit beast_host_warp(int lanes) : bar(lanes) {}
  beast_host_bar bar;
  double a[32][8], b[32][4], c[32][4];
};
thread_local beast_host_warp* beast_host_this_warp;
thread_local unsigned beast_host_lane;
// PTX ISA, "Matrix Fragments for mma.m8n8k4 with .f64", "... mma.m16n8k4" (.f64), "... mma.m16n8k8"
// (.f64), "... mma.m16n8k16" (.f64): groupID = %laneid >> 2, threadID_in_group = %laneid % 4.
inline void beast_host_frag_a(int M, int K, unsigned lane, int i, int& row, int& col) {
  const int g = lane >> 2, t = lane % 4;
  if (M == 8) { row = g; col = t; }                                    // m8n8k4: a0
  else if (K == 4) { row = i == 0 ? g : g + 8; col = t; }              // m16n8k4: a0, a1
  else if (K == 8) { row = (i == 0 || i == 2) ? g : g + 8; col = (i < 2) ? t : t + 4; }   // m16n8k8: a0..a3
  else { row = i % 2 == 0 ? g : g + 8; col = i % 2 == 0 ? i * 2 + t : i * 2 - 2 + t; }   // m16n8k16: a0..a7
}
inline void beast_host_frag_b(int K, unsigned lane, int i, int& row, int& col) {
  const int g = lane >> 2, t = lane % 4;
  col = g;
  row = t + 4 * i;                       // k4: b0 (row t); k8: b0, b1 (t, t + 4); k16: b0..b3 (t + 4i)
  (void)K;
}
inline void beast_host_frag_c(int M, unsigned lane, int i, int& row, int& col) {
  const int g = lane >> 2, t = lane % 4;
  if (M == 8) { row = g; col = t * 2 + i; }                            // m8n8: c0, c1
  else { row = i < 2 ? g : g + 8; col = t * 2 + (i & 1); }             // m16n8: c0..c3
}
template <int M, int K> inline void beast_host_mma(double* d, const double* a, const double* b) {
  constexpr int AR = M * K / 32, BR = 8 * K / 32, CR = M * 8 / 32;
#ifdef BEAST_HOST_COUNT
  beast_host_note(beast_host_ev_mma, nullptr, K, nullptr, M);
#endif
  beast_host_warp& w = *beast_host_this_warp;
  const unsigned me = beast_host_lane;
  for (int i = 0; i < AR; ++i) w.a[me][i] = a[i];
  for (int i = 0; i < BR; ++i) w.b[me][i] = b[i];
  for (int i = 0; i < CR; ++i) w.c[me][i] = d[i];
  w.bar.arrive_and_wait();
  double A[M][K], B[K][8], C[M][8];
  int seen_a[M][K] = {}, seen_b[K][8] = {}, seen_c[M][8] = {};
  int row, col;
  for (unsigned lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < AR; ++i) { beast_host_frag_a(M, K, lane, i, row, col); A[row][col] = w.a[lane][i]; ++seen_a[row][col]; }
    for (int i = 0; i < BR; ++i) { beast_host_frag_b(K, lane, i, row, col); B[row][col] = w.b[lane][i]; ++seen_b[row][col]; }
    for (int i = 0; i < CR; ++i) { beast_host_frag_c(M, lane, i, row, col); C[row][col] = w.c[lane][i]; ++seen_c[row][col]; }
  }
  for (int r = 0; r < M; ++r)
    for (int k = 0; k < K; ++k)
      if (seen_a[r][k] != 1) beast_host_fail("MMA fragment layout of A does not cover the matrix once");
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < 8; ++c)
      if (seen_b[k][c] != 1) beast_host_fail("MMA fragment layout of B does not cover the matrix once");
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < 8; ++c)
      if (seen_c[r][c] != 1) beast_host_fail("MMA fragment layout of C does not cover the matrix once");
  for (int i = 0; i < CR; ++i) {
    beast_host_frag_c(M, me, i, row, col);
    double s = C[row][col];
    for (int k = 0; k < K; ++k) s = fma(A[row][k], B[k][col], s);
    d[i] = s;
  }
  w.bar.arrive_and_wait();
}
inline void beast_mma_m8n8k4(double* d, const double* a, const double* b) { beast_host_mma<8, 4>(d, a, b); }
inline void beast_mma_m16n8k4(double* d, const double* a, const double* b) { beast_host_mma<16, 4>(d, a, b); }
inline void beast_mma_m16n8k8(double* d, const double* a, const double* b) { beast_host_mma<16, 8>(d, a, b); }
inline void beast_mma_m16n8k16(double* d, const double* a, const double* b) { beast_host_mma<16, 16>(d, a, b); }

// The body a fiber runs (the kernel with its arguments); a fiber that returns goes back to
// the launcher (uc_link).
thread_local void (*beast_host_body)(void*);
thread_local void* beast_host_body_arg;
static void beast_host_fiber_main() {
  beast_host_body(beast_host_body_arg);
  beast_host_me->done = true;
  ++beast_host_progress;
}

// Each fiber's stack: 256 KiB reserved (touched pages only are committed) above a guard page,
// so that a kernel overflowing its stack faults instead of writing over its neighbour's.
constexpr size_t beast_host_stack_bytes = 256 * 1024;

template <class F, class... Args>
void beast_host_launch(F kernel, dim3 grid, dim3 block, size_t smem_bytes, Args... args) {
  const unsigned nt = block.x * block.y * block.z;
  const size_t bytes = (smem_bytes + 15) / 16 * 16 + 16;
  const size_t page = 4096, span = beast_host_stack_bytes + page;
  unsigned char* stacks = static_cast<unsigned char*>(
      mmap(nullptr, span * nt, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (stacks == MAP_FAILED) { beast_host_fail("no memory for the stacks of a block's threads"); return; }
  for (unsigned t = 0; t < nt; ++t) mprotect(stacks + t * span, page, PROT_NONE);
  auto run = [&]() { kernel(args...); };
  beast_host_body = [](void* f) { (*static_cast<decltype(run)*>(f))(); };
  beast_host_body_arg = &run;
  std::vector<beast_host_fiber> fibers(nt);
  bool stuck = false;
  for (unsigned by = 0; by < grid.y && !stuck; ++by)
    for (unsigned bx = 0; bx < grid.x && !stuck; ++bx) {
      unsigned char* smem = static_cast<unsigned char*>(std::aligned_alloc(16, bytes));
      std::memset(smem, 0xff, bytes);
      beast_host_bar bar(static_cast<int>(nt));
      std::vector<std::unique_ptr<beast_host_warp>> warps;
      for (unsigned w = 0; w * 32 < nt; ++w)
        warps.push_back(std::make_unique<beast_host_warp>(static_cast<int>(nt - w * 32 < 32 ? nt - w * 32 : 32)));
      blockIdx = dim3{bx, by, 0}; blockDim = block; gridDim = grid;
      beast_host_barrier = &bar; beast_host_smem = smem; beast_host_smem_bytes = smem_bytes;
      for (unsigned t = 0; t < nt; ++t) {
        beast_host_fiber& f = fibers[t];
        f.done = false; f.open.clear(); f.groups.clear();
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks + t * span + page;
        f.ctx.uc_stack.ss_size = beast_host_stack_bytes;
        f.ctx.uc_link = &beast_host_turns;
        makecontext(&f.ctx, beast_host_fiber_main, 0);
      }
      unsigned live = nt;
      while (live) {              // turns in thread order until every thread has returned
        const unsigned long long before = beast_host_progress;
        for (unsigned t = 0; t < nt; ++t) {
          beast_host_fiber& f = fibers[t];
          if (f.done) continue;
          threadIdx = dim3{t % block.x, t / block.x, 0};
          beast_host_this_warp = warps[t / 32].get(); beast_host_lane = t % 32;
          beast_host_me = &f;
          swapcontext(&beast_host_turns, &f.ctx);
          if (f.done) --live;
        }
        if (live && beast_host_progress == before) {   // all waiting, none can arrive: abandoned
          beast_host_fail("block (" + std::to_string(bx) + ", " + std::to_string(by) + "): " + std::to_string(live) +
                          " thread(s) wait at a barrier that the block's other threads never reach");
          stuck = true;
          break;
        }
      }
      std::free(smem);
    }
  munmap(stacks, span * nt);
}
"""


def host_compiler() -> str | None:
    """Path of a C++20 host compiler (``$CXX`` or g++/clang++), or None."""
    for cand in (os.environ.get("CXX"), "g++", "clang++"):
        if cand and shutil.which(cand):
            return shutil.which(cand)
    return None


def _launcher(name: str) -> str:
    return f"""
extern "C" void host_launch_{name}(unsigned gx, unsigned gy, unsigned bx, unsigned by, unsigned long long smem,
                                   int M, int N, int K, double are, double aim, const void* A, int lda,
                                   const void* B, int ldb, double bre, double bim, void* C, int ldc) {{
  using namespace {name}_ns;
  beast_host_launch({name}, dim3{{gx, gy, 1u}}, dim3{{bx, by, 1u}}, (size_t)smem,
                    M, N, K, (R)are, (R)aim, (const T*)A, lda, (const T*)B, ldb, (R)bre, (R)bim, (T*)C, ldc);
}}
"""


#: what every host compile of generated kernels and the precompiled shim share (a precompiled
#: header is used only by a compile with the same options)
HOST_FLAGS = ("-std=c++20", "-O1", "-fPIC", "-pthread", "-Wno-unknown-pragmas", "-Wno-unused-parameter")

_shims: dict = {}


@functools.lru_cache(maxsize=None)
def _compiler_identity(cxx: str) -> str:
    proc = subprocess.run([cxx, "--version"], capture_output=True, text=True)
    return proc.stdout


def toolchain_key(cxx: str) -> str:
    """A digest of what every host build with ``cxx`` reads besides its kernels: the shim, the
    compiler (its path and ``--version``) and :data:`HOST_FLAGS`; part of any cache key of a
    host build."""
    from ...runtime import cache
    return cache.key(HOST_SHIM, cxx, _compiler_identity(cxx), HOST_FLAGS)


def shim_text(counting: bool = False) -> str:
    """:data:`HOST_SHIM`, or with ``counting`` the same text after ``#define BEAST_HOST_COUNT 1``:
    every hook then records an event in its thread's trace (:mod:`beast.tune.sim.counters`).  The
    ordinary shim compiles none of that, so ordinary host runs pay nothing for it."""
    return COUNT_DEFINE + HOST_SHIM if counting else HOST_SHIM


#: what switches the shim's counting hooks on (before the shim's text)
COUNT_DEFINE = "#define BEAST_HOST_COUNT 1\n"


def precompiled_shim(cxx: str, counting: bool = False) -> str | None:
    """Path of :data:`HOST_SHIM` as a header with its precompiled form (``.gch``) beside it, in
    beast's cache (:func:`beast.runtime.cache.cache_dir`, keyed by the shim, the compiler and its
    flags), built on first use; None when it cannot be built (the shim is then compiled with
    each kernel, as it is inside the header anyway).  ``counting``: the shim with its counting
    hooks switched on (:func:`shim_text`), a header of its own.

    Parsing the shim's standard headers is most of a kernel's host compile; a compiler that finds the ``.gch`` unusable reads the
    header's text instead, so the result is the same either way."""
    from ...runtime import cache
    memo = (cxx, cache.cache_dir(create=False), counting)   # $BEAST_CACHE_DIR may change
    known = _shims.get(memo, "")
    if known is None or (known and os.path.exists(known + ".gch")):
        return known
    path = None
    try:
        entry = cache.cache_dir("hostsim", toolchain_key(cxx)[:24] + ("-count" if counting else ""))
        header = os.path.join(entry, "shim.h")
        if _whole_pch(header):
            path = header
        else:
            with cache.private_dir(entry) as tmp:
                src = os.path.join(tmp, "shim.h")
                with open(src, "w") as f:
                    f.write(shim_text(counting))
                proc = subprocess.run([cxx, *HOST_FLAGS, "-x", "c++-header", src, "-o", src + ".gch"],
                                      capture_output=True, text=True)
                if proc.returncode == 0:
                    cache.install(src, header)           # the header first: alone it is still right
                    # the size before the file it describes (a reader checks the one against the other)
                    cache.atomic_write_text(header + _PCH_SIZE, str(os.path.getsize(src + ".gch")))
                    cache.install(src + ".gch", header + ".gch")
                    path = header
    except OSError:                                      # no writable cache: no precompiled header
        path = None
    _shims[memo] = path
    return path


_PCH_SIZE = ".gch.size"     # beside the precompiled header: its size in bytes, written with it


def _whole_pch(header: str) -> bool:
    """True when ``header``'s precompiled form is in the cache and whole: its size is the one
    written with it (a truncated ``.gch`` is a fatal error in every compile that includes the
    header, an empty one is silently ignored). A damaged one is removed with a notice."""
    gch = header + ".gch"
    try:
        size = os.path.getsize(gch)
    except OSError:
        return False
    try:
        with open(header + _PCH_SIZE, encoding="ascii") as fh:
            recorded = int(fh.read().strip())
    except (OSError, ValueError):
        recorded = None
    if recorded == size and os.path.exists(header):
        return True
    from ...runtime.cache_check import damaged
    damaged(gch, "no size written with it" if recorded is None else f"{size} bytes, written as {recorded}")
    return False


def build_host_library(source: str, names: Sequence[str], path: str,
                       options: Sequence[str] = (), counting: bool = False) -> tuple[bool, str]:
    """Compile generated kernel ``source`` (kernels ``names``) into the shared library ``path``.

    The host simulator's counterpart of an NVRTC compile: it needs no device, and the library's
    bytes can be shipped to another process and loaded there (:meth:`HostModule.from_library`).
    ``options`` go to the compiler (``-D...`` and the like).  The shim comes first, as a
    precompiled header where it can (:func:`precompiled_shim`); ``counting`` switches on its
    counting hooks (:func:`shim_text`).  Returns ``(ok, compiler log)``."""
    cxx = host_compiler()
    if cxx is None:
        raise BeastError("no C++ host compiler (g++ or clang++) found to run kernels on the CPU")
    shim = precompiled_shim(cxx, counting)
    body = source + "".join(_launcher(n) for n in names)
    src = os.path.splitext(path)[0] + ".cpp"
    with open(src, "w") as f:
        f.write(body if shim else shim_text(counting) + body)
    include = ["-include", shim] if shim else []
    cmd = [cxx, *HOST_FLAGS, "-shared", *include, *options, src, "-o", path]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode == 0, proc.stderr[-4000:]


class HostModule:
    """Generated kernel source (``source`` holding the kernels ``names``) compiled for the host.

    :meth:`launch` takes the arguments of a CUDA launch of the generated kernel signature."""

    def __init__(self, source: str, names: Sequence[str], workdir: str | None = None):
        self.names = list(names)
        digest = hashlib.sha256((source + "\0".join(self.names)).encode()).hexdigest()[:16]
        self._tmp = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="beast-hostsim-")
            workdir = self._tmp.name
        lib = os.path.join(workdir, f"hostsim_{digest}.so")
        ok, log = build_host_library(source, self.names, lib)
        if not ok:
            raise BeastError("host compilation of the generated kernels failed:\n" + log)
        self.lib = ctypes.CDLL(lib)

    @classmethod
    def from_library(cls, path: str, names: Sequence[str]) -> "HostModule":
        """Load a library :func:`build_host_library` made (possibly in another process)."""
        self = cls.__new__(cls)
        self.names, self._tmp = list(names), None
        self.lib = ctypes.CDLL(os.path.abspath(path))
        return self

    def launch(self, name: str, grid, block, smem_bytes: int, args) -> None:
        """Run kernel ``name``: ``args`` = (M, N, K, alpha_re, alpha_im, A, lda, B, ldb, beta_re,
        beta_im, C, ldc) with NumPy arrays (or raw addresses) for A, B, C."""
        fn = getattr(self.lib, f"host_launch_{name}")
        fn.restype = None
        fn.argtypes = [ctypes.c_uint] * 4 + [ctypes.c_ulonglong] + [ctypes.c_int] * 3 + [ctypes.c_double] * 2 \
            + [ctypes.c_void_p, ctypes.c_int] * 2 + [ctypes.c_double] * 2 + [ctypes.c_void_p, ctypes.c_int]

        def addr(x):
            return x if isinstance(x, int) else x.ctypes.data

        m, n, k, are, aim, a, lda, b, ldb, bre, bim, c, ldc = args
        self.lib.beast_host_clear_error()
        fn(int(grid[0]), int(grid[1]), int(block[0]), int(block[1]), int(smem_bytes), int(m), int(n), int(k),
           float(are), float(aim), addr(a), int(lda), addr(b), int(ldb), float(bre), float(bim), addr(c), int(ldc))
        self.lib.beast_host_last_error.restype = ctypes.c_char_p
        error = self.lib.beast_host_last_error()
        if error:
            raise BeastError(f"kernel {name} on the host: {error.decode()}")


class HostKernels:
    """Several generated kernels compiled for the host; :meth:`gemm` runs one on NumPy arrays."""

    def __init__(self, kernels: Sequence[GemmKernel], workdir: str | None = None):
        self.kernels = {k.name: k for k in kernels}
        self.module = HostModule(translation_unit(kernels), list(self.kernels), workdir)

    def gemm(self, name: str, op_a: np.ndarray, op_b: np.ndarray, c: np.ndarray, alpha=1.0, beta=0.0,
             ld_multiple: int = 4) -> np.ndarray:
        """``alpha * op_a @ op_b + beta * c`` computed by kernel ``name`` (arrays in the kernel's dtype).

        The operands are stored as the kernel's transposes ask, column-major with leading
        dimensions rounded up to ``ld_multiple`` (padding filled with NaN).
        """
        k = self.kernels[name]
        st = k.settings
        dtype = np.dtype(st.numpy_dtype)
        M, K = op_a.shape
        N = op_b.shape[1]

        def store(mat):      # column-major with padded leading dimension; returns (buffer, ld)
            rows, cols = mat.shape
            ld = max(1, -(-rows // ld_multiple) * ld_multiple)
            buf = np.full((max(cols, 1), ld), np.nan, dtype=dtype)
            buf[:cols, :rows] = mat.T
            return buf, ld

        a_buf, lda = store(op_a.T if st.trans_a else op_a)
        b_buf, ldb = store(op_b.T if st.trans_b else op_b)
        c_buf = np.array(c, dtype=dtype).T.copy()          # (N, M): column-major C, ldc = M
        alpha, beta = complex(alpha), complex(beta)
        self.module.launch(name, k.grid(M, N), k.block, k.smem_bytes,
                           (M, N, K, alpha.real, alpha.imag, a_buf, lda, b_buf, ldb, beta.real, beta.imag,
                            c_buf, max(M, 1)))
        return c_buf.T.copy()
