"""The host simulator runs a block's threads as fibers that take turns (beast.tune.sim.hostsim): a
barrier waits for every thread of the block, a missing barrier shows every time, a barrier
that some threads never reach is reported instead of hanging, and a block of 1,024 threads with
deep stacks runs."""
import numpy as np
import pytest

from beast.errors import BeastError
from beast.tune.sim.hostsim import HostModule, host_compiler

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="no C++20 host compiler")

SIGNATURE = "int M, int N, int K, R are, R aim, const T* A, int lda, const T* B, int ldb, R bre, R bim, T* C, int ldc"

#: each thread stores its element in shared memory and reads its right neighbour's; with
#: SYNC the read waits at __syncthreads; EARLY makes thread EARLY of every block return first;
#: DEPTH fills a local array of that many doubles (the fiber's stack)
SOURCE = """
namespace {name}_ns {{
using T = double; using R = double;
__global__ void {name}({signature}) {{
  BEAST_DYNAMIC_SMEM(raw);
  double* s = reinterpret_cast<double*>(raw);
  const unsigned nt = blockDim.x * blockDim.y, t = threadIdx.y * blockDim.x + threadIdx.x;
  const unsigned at = (blockIdx.y * gridDim.x + blockIdx.x) * nt + t;
  if ({early} >= 0 && t == (unsigned){early}) return;
  volatile double deep[{depth}];
  for (int i = 0; i < {depth}; ++i) deep[i] = A[at] + i;
  s[t] = deep[0];
  {sync}
  C[at] = s[(t + 1) % nt] - (deep[{depth} - 1] - ({depth} - 1));
}}
}}  // namespace {name}_ns
"""


def run(name, grid, block, sync=True, early=-1, depth=1):
    src = SOURCE.format(name=name, signature=SIGNATURE, early=early, depth=depth,
                        sync="__syncthreads();" if sync else "")
    module = HostModule(src, [name])
    nt = block[0] * block[1]
    n = grid[0] * grid[1] * nt
    a = np.arange(n, dtype=np.float64) * 3 + 1
    c = np.zeros(n)
    module.launch(name, grid, block, nt * 8, (0, 0, 0, 1.0, 0.0, a, 1, a, 1, 0.0, 0.0, c, 1))
    return a.reshape(-1, nt), c.reshape(-1, nt)


def test_a_barrier_waits_for_every_thread_of_the_block():
    a, c = run("sync_k", (3, 2), (8, 4))
    assert np.array_equal(c, np.roll(a, -1, axis=1) - a)


def test_a_missing_barrier_reads_unwritten_shared_memory_every_time():
    """Thread t reads thread t + 1's element before that thread has run: the 0xff fill (NaN)."""
    for _ in range(3):
        a, c = run("nosync_k", (2, 1), (16, 1), sync=False)
        assert np.isnan(c[:, :-1]).all()
        assert np.array_equal(c[:, -1], a[:, 0] - a[:, -1])      # the last reads thread 0's, stored before


def test_a_barrier_some_threads_never_reach_is_reported():
    with pytest.raises(BeastError, match=r"block \(0, 0\): 31 thread\(s\) wait at a barrier that the block's other threads never reach"):
        run("early_k", (2, 2), (32, 1), early=5)


def test_a_thousand_threads_with_deep_stacks():
    a, c = run("deep_k", (1, 1), (32, 32), depth=16384)              # 128 KiB of locals in each of 1,024
    assert np.array_equal(c, np.roll(a, -1, axis=1) - a)
