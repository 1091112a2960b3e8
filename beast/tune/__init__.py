"""Tuning GEMM kernels over a space's survivors on a GPU: the BEAST paper's (Fig. 7) and FP64 tensor cores.

* :mod:`beast.tune.kernels.paper` -- CUDA source of the paper's kernel for one configuration (its settings and
  layout: :mod:`beast.tune.kernels.layout`);
* :mod:`beast.tune.kernels.mma` -- CUDA source of the FP64 tensor-core kernel (``spaces/gemm_mma.py``);
* :mod:`beast.tune.kernels.families` -- which of the two a space asks for;
* :mod:`beast.tune.sim.emulate` -- NumPy emulation of its tiling (correctness without a GPU);
* :mod:`beast.tune.sim.hostsim` -- the generated CUDA text run on CPU threads (tests);
* :mod:`beast.tune.sim.counters` -- hardware counters from the host simulator (wavefronts, sectors, MMAs);
* :mod:`beast.tune.model.compiler_facts` -- registers, spills, local and shared memory from nvcc/ptxas (cached);
* :mod:`beast.tune.model.speed` -- predicted time, an optimistic lower bound, the gate of the tuner's
  loop (its counters: :mod:`beast.tune.model.features`);
* :mod:`beast.tune.model.explain` -- ``beast tune --explain``: one configuration's facts, counters, prediction;
* :mod:`beast.tune.device.gpu` -- CuPy layer: NVRTC compile, launch, cuBLAS check, event timing;
* :mod:`beast.tune.device.measure` -- measurement records and the repeat-until-stable rule;
* :mod:`beast.tune.driver.log` -- the resumable JSONL log;
* :mod:`beast.tune.device.isolate` -- measurements in a worker process killed at a time limit;
* :mod:`beast.tune.driver.local` -- :func:`tune` (its report's text: :mod:`beast.tune.driver.report`);
* :mod:`beast.tune.driver.ray` -- the same over every GPU of a Ray cluster (optional, ``[ray]``).
* :mod:`beast.search` -- search strategies (random, local, model, hybrid, portfolio): ask/tell;
* :mod:`beast.search.replay` -- a strategy played against recorded times (``beast replay``).
"""
from .device.gpu import gpu_available, require_gpu
from .kernels.paper import (KERNEL_NAME, KERNEL_VERSION, GemmKernel, GemmLayout, GemmSettings, generate)
from .device.measure import (COMPILE_ERROR, CONTEXT_LOST, CRASHED, LAUNCH_ERROR, OK, PRUNED, STATUSES, TIMEOUT, WRONG, CompileFailure, FatalBackendError, Measurement)
from .driver.local import TuneReport, TuneResult, format_report, progress_line, tune

__all__ = ["tune", "format_report", "progress_line", "gpu_available", "require_gpu", "TuneReport", "TuneResult",
           "generate", "GemmKernel", "GemmLayout", "GemmSettings", "KERNEL_NAME", "KERNEL_VERSION",
           "Measurement", "CompileFailure", "FatalBackendError", "STATUSES",
           "OK", "COMPILE_ERROR", "LAUNCH_ERROR", "WRONG", "TIMEOUT", "CRASHED", "CONTEXT_LOST", "PRUNED"]
