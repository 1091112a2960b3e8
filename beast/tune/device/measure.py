"""What a measurement of one configuration holds, and the repeat-until-stable timing rule.

Backend-neutral: :mod:`beast.tune.device.gpu` produces :class:`Measurement` objects on a GPU, tests
produce them with fake backends, :mod:`beast.tune.driver.log` stores them and
:mod:`beast.tune.driver.local` ranks them.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

from ...errors import BeastError

OK = "ok"
COMPILE_ERROR = "compile_error"
LAUNCH_ERROR = "launch_error"
WRONG = "wrong"
#: the measurement ran past its time limit (a hung kernel); the measuring process was killed
#: (:mod:`beast.tune.device.isolate`).
TIMEOUT = "timeout"
#: the measuring process died (a driver crash, an abort), or a previous run ended while it
#: measured the configuration (a ``started`` record without a result, :mod:`beast.tune.driver.log`).
CRASHED = "crashed"
#: the kernel left the CUDA context unusable (an illegal address); the measuring process was
#: replaced by a fresh one.
CONTEXT_LOST = "context_lost"
#: neither compiled nor measured: the speed model's optimistic lower bound on its time exceeded the
#: best time measured so far (:class:`beast.tune.model.speed.ModelGate`).
PRUNED = "pruned"
#: every status a configuration can end with.
STATUSES = (OK, COMPILE_ERROR, LAUNCH_ERROR, WRONG, TIMEOUT, CRASHED, CONTEXT_LOST, PRUNED)
#: the statuses of a measurement that did not come back from its process.
LOST = (TIMEOUT, CRASHED, CONTEXT_LOST)


@dataclass
class Measurement:
    """The outcome of one configuration (or of the cuBLAS reference).

    ``status`` is one of :data:`STATUSES`; ``ms`` the mean time of one GEMM and ``gflops`` the
    rate (both None unless ``status == "ok"``); ``ci_rel`` the half-width of the 95 %
    confidence interval relative to the mean; ``reps`` the timed launches; ``error`` a message
    for failures; ``extra`` anything else worth logging (registers, error ratio, ...).
    """

    status: str
    ms: float | None = None
    gflops: float | None = None
    ci_rel: float | None = None
    reps: int | None = None
    error: str | None = None
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        out = {"status": self.status}
        for key in ("ms", "gflops", "ci_rel", "reps", "error"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Measurement":
        known = {"status", "ms", "gflops", "ci_rel", "reps", "error"}
        extra = {k: v for k, v in data.items() if k not in known and k not in ("config", "reference")}
        return cls(status=data.get("status", OK), ms=data.get("ms"), gflops=data.get("gflops"),
                   ci_rel=data.get("ci_rel"), reps=data.get("reps"), error=data.get("error"),
                   extra=extra)


class CompileFailure(BeastError):
    """A configuration's kernel did not compile (the message holds the compiler log)."""


class FatalBackendError(BeastError):
    """The measuring device cannot go on (e.g. a CUDA error that poisons the context).

    The runner records the configuration in flight and stops; the log lets a new process
    resume after it.  ``measured`` False: the configuration in flight was not tried (a fresh
    measuring process could not be started), so the runner records nothing for it."""

    measured = True


#: a configuration whose warm-up launches are already slower than this many times the best
#: time so far is recorded from them, without the confidence-interval loop (an early cut).
EARLY_CUT = 2.0
#: the same for a configuration whose compile put registers in local memory (``local_bytes``
#: > 0, known before it runs): spilling kernels run far slower, so they get less benefit of the
#: doubt; not less than 1.5, which keeps the top ranks of noisy replays of the H200 logs in place
#: (``bench/early_cut.py``; bench/README.md has the figures).
SPILL_CUT = 1.5


def cutoff_ms(best_ms: float | None, local_bytes: int | None = 0, early_cut: float | None = EARLY_CUT,
              spill_cut: float | None = SPILL_CUT) -> tuple[float | None, float | None]:
    """(cut-off in ms, its factor) for a configuration measured after ``best_ms`` (the best
    time so far; None before any): ``early_cut`` x best, or ``spill_cut`` x best when its
    compile reports ``local_bytes`` > 0.  (None, None): no cut (no best yet, or the factor
    is None).  A factor below 1 would cut configurations faster than the best: refused."""
    factor = spill_cut if (local_bytes or 0) > 0 and spill_cut is not None else early_cut
    if best_ms is None or factor is None or not best_ms > 0:
        return None, None
    if factor < 1:
        raise BeastError(f"an early-cut factor must be at least 1 (got {factor}): "
                         f"a smaller one would cut configurations faster than the best")
    return best_ms * factor, factor


def gemm_flops(m: int, n: int, k: int, complex_arithmetic: bool) -> float:
    """Floating-point operations of one GEMM: 2MNK, or 8MNK for complex (4 real FMAs per complex FMA)."""
    return (8.0 if complex_arithmetic else 2.0) * m * n * k


# two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (table, then Cornish-Fisher)."""
    if df < 1:
        return math.inf
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


@dataclass(frozen=True)
class Timing:
    """Result of :func:`time_until_stable`: per-launch mean and CI, and how it was reached."""

    mean_ms: float
    half_width_ms: float
    samples: int
    launches_per_sample: int
    converged: bool
    cut: bool = False

    @property
    def ci_rel(self) -> float:
        return self.half_width_ms / self.mean_ms if self.mean_ms > 0 else math.inf

    @property
    def reps(self) -> int:
        return self.samples * self.launches_per_sample


def time_until_stable(run: Callable[[int], float], *, rel_ci: float = 0.03, warmup: int = 2,
                      min_samples: int = 5, max_samples: int = 200, max_seconds: float = 10.0,
                      min_sample_ms: float = 1.0, cutoff_ms: float | None = None,
                      clock: Callable[[], float] = time.perf_counter) -> Timing:
    """Time ``run`` until the 95 % confidence interval of the mean is within ``rel_ci`` of it.

    ``run(n)`` performs ``n`` back-to-back launches and returns their elapsed milliseconds
    (CUDA events around them).  After ``warmup`` single launches, launches are batched so that
    one sample lasts at least ``min_sample_ms`` (short kernels are below event resolution);
    samples are added until ``t(0.975, n-1) * s / sqrt(n) <= rel_ci * mean`` with at least
    ``min_samples`` samples, or until ``max_samples`` samples or ``max_seconds`` of wall time
    (then ``converged`` is False).

    Early cut: with ``cutoff_ms``, a kernel already slower than that is not timed further.
    When the warm-up launches each last at least ``min_sample_ms``, the fastest of them is
    the time (``cut``: one sample of one launch); a shorter kernel is judged on its first
    batched sample instead.  Either way a kernel at or under ``cutoff_ms`` gets the full loop.
    """
    start = clock()
    warm = [run(1) for _ in range(max(1, warmup))]
    fastest = min(warm)
    if cutoff_ms is not None and fastest >= min_sample_ms and fastest > cutoff_ms:
        return Timing(fastest, math.inf, 1, 1, False, cut=True)
    per = max(float(warm[-1] or 0.0), 1e-6)
    batch = max(1, math.ceil(min_sample_ms / per))
    samples: list[float] = []
    mean = half = math.inf
    converged = False
    while True:
        samples.append(run(batch) / batch)
        n = len(samples)
        if n == 1 and cutoff_ms is not None and samples[0] > cutoff_ms:
            return Timing(samples[0], math.inf, 1, batch, False, cut=True)
        mean = sum(samples) / n
        if n >= 2:
            var = sum((x - mean) ** 2 for x in samples) / (n - 1)
            half = t_quantile_975(n - 1) * math.sqrt(var / n)
        if n >= min_samples and half <= rel_ci * mean:
            converged = True
            break
        if n >= max_samples or clock() - start > max_seconds:
            break
    if len(samples) < 2:
        half = math.inf
    return Timing(mean, half, len(samples), batch, converged)
