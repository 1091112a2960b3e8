"""Run generated GEMM kernels on the CPU: the CUDA text compiled by a C++20 host compiler.

For testing without a GPU.  A small header maps the few CUDA constructs the template uses
(``threadIdx``, ``blockIdx``, ``__syncthreads``, dynamic shared memory, ``__ldg``, vector types)
onto host C++: every thread of a block is a ``std::thread`` and ``__syncthreads`` a
``std::barrier``, blocks run one after another, and shared memory starts filled with 0xff
bytes (NaN for float and double) so that reading an element no thread stored shows.  The
kernels are the very text :func:`beast.tune.kernel.generate` produces; only the prelude's
``BEAST_DYNAMIC_SMEM``/``BEAST_LDG`` hooks are predefined.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from typing import Sequence

import numpy as np

from beast.errors import BeastError

from .kernel import GemmKernel, translation_unit

HOST_SHIM = r"""
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
using std::fma; using std::fmaf;
struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
thread_local std::barrier<>* beast_host_barrier;
thread_local unsigned char* beast_host_smem;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __syncthreads() beast_host_barrier->arrive_and_wait()
#define BEAST_DYNAMIC_SMEM(name) unsigned char* name = beast_host_smem
#define BEAST_LDG(p) (*(p))

template <class F, class... Args>
void beast_host_launch(F kernel, dim3 grid, dim3 block, size_t smem_bytes, Args... args) {
  const unsigned nt = block.x * block.y * block.z;
  const size_t bytes = (smem_bytes + 15) / 16 * 16 + 16;
  for (unsigned by = 0; by < grid.y; ++by)
    for (unsigned bx = 0; bx < grid.x; ++bx) {
      unsigned char* smem = static_cast<unsigned char*>(std::aligned_alloc(16, bytes));
      std::memset(smem, 0xff, bytes);
      std::barrier<> bar(nt);
      std::vector<std::thread> threads;
      for (unsigned ty = 0; ty < block.y; ++ty)
        for (unsigned tx = 0; tx < block.x; ++tx)
          threads.emplace_back([=, &bar] {
            threadIdx = dim3{tx, ty, 0}; blockIdx = dim3{bx, by, 0};
            blockDim = block; gridDim = grid;
            beast_host_barrier = &bar; beast_host_smem = smem;
            kernel(args...);
          });
      for (auto& t : threads) t.join();
      std::free(smem);
    }
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


def build_host_library(source: str, names: Sequence[str], path: str,
                       options: Sequence[str] = ()) -> tuple[bool, str]:
    """Compile generated kernel ``source`` (kernels ``names``) into the shared library ``path``.

    The host simulator's counterpart of an NVRTC compile: it needs no device, and the library's
    bytes can be shipped to another process and loaded there (:meth:`HostModule.from_library`).
    ``options`` go to the compiler (``-D...`` and the like).  Returns ``(ok, compiler log)``."""
    cxx = host_compiler()
    if cxx is None:
        raise BeastError("no C++ host compiler (g++ or clang++) found to run kernels on the CPU")
    full = HOST_SHIM + source + "".join(_launcher(n) for n in names)
    src = os.path.splitext(path)[0] + ".cpp"
    with open(src, "w") as f:
        f.write(full)
    cmd = [cxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-Wno-unknown-pragmas",
           "-Wno-unused-parameter", *options, src, "-o", path]
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
        fn(int(grid[0]), int(grid[1]), int(block[0]), int(block[1]), int(smem_bytes), int(m), int(n), int(k),
           float(are), float(aim), addr(a), int(lda), addr(b), int(ldb), float(bre), float(bim), addr(c), int(ldc))


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
