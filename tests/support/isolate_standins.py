"""Stand-in backends for tests/unit/tune/device/test_isolate.py, made in the worker processes of
beast.tune.device.isolate (spawned: they import this module by name, so it is not a test module).

:class:`BadKernels` makes a :class:`BadBackend` whose kernels misbehave by configuration:
``hang`` loops forever, ``abort`` calls ``os.abort()``, ``segfault`` writes to address 8 (the
process dies of SIGSEGV, as on an out-of-bounds write outside the GPU), ``illegal`` raises the
FatalBackendError the CuPy backend raises after an illegal address; any other configuration
measures at once, its speed a function of its values."""
from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass, field

from beast.tune.device.measure import OK, CompileFailure, FatalBackendError, Measurement


def speed(cfg) -> float:
    return float(cfg["blk_m"] * cfg["blk_n"] + 3 * cfg["blk_k"] + cfg["dim_m"])


@dataclass(frozen=True)
class Built:
    """The stand-in's artefact: the configuration, "compiled" in the tuning process."""

    config: tuple
    built_by: int
    kernel: object = None


@dataclass(frozen=True)
class StandinCompiler:
    broken: tuple = ()

    def build(self, config) -> Built:
        items = tuple(sorted((k, int(v)) for k, v in config.items()))
        if items in self.broken:
            raise CompileFailure("error: expected a ';' (stand-in)")
        return Built(items, os.getpid())


class BadBackend:
    device_name = "Stand-in GPU"
    compute_capability = (9, 0)

    def __init__(self, behaviour: dict, broken: tuple):
        self.behaviour, self.broken = behaviour, broken
        self.context_lost = False

    def compiler(self):
        return StandinCompiler(self.broken)

    def load(self, built: Built) -> dict:
        return dict(built.config)

    def measure(self, cfg, best_ms=None) -> Measurement:
        if self.context_lost:              # as CUDA: nothing works in this process any more
            raise FatalBackendError("the CUDA context is unusable (stand-in)")
        what = self.behaviour.get(tuple(sorted(cfg.items())))
        if what == "hang":
            while True:
                time.sleep(60)
        if what == "abort":
            os.abort()
        if what == "segfault":
            ctypes.memset(8, 0, 8)
        if what == "illegal":
            self.context_lost = True
            raise FatalBackendError("the CUDA context is unusable after launch: an illegal memory access "
                                    "was encountered (stand-in)")
        g = speed(cfg)
        return Measurement(OK, ms=1000.0 / g, gflops=g, ci_rel=0.01, reps=5,
                           extra={"pid": os.getpid(), "told_best": best_ms is not None})

    def reference(self) -> Measurement:
        return Measurement(OK, ms=0.1, gflops=300.0, extra={"pid": os.getpid()})


@dataclass(frozen=True)
class BadKernels:
    """Picklable factory: ``behaviour`` maps a configuration's sorted items to what it does."""

    behaviour: dict = field(default_factory=dict)
    broken: tuple = ()

    def __call__(self) -> BadBackend:
        return BadBackend(dict(self.behaviour), self.broken)


@dataclass(frozen=True)
class NoDevice:
    """A factory that fails as CupyBackend does on a machine without a GPU."""

    def __call__(self):
        from beast.errors import DeviceError
        raise DeviceError("no GPU found: the CUDA driver sees no device (stand-in)")


class DyingBackend:
    """In the tuning process itself (no isolation): the ``die``-th measurement ends the process."""

    device_name = "Stand-in GPU"

    def __init__(self, die: tuple):
        self.die = die

    def compile(self, cfg):
        return dict(cfg)

    def measure(self, cfg):
        if tuple(sorted(cfg.items())) == self.die:
            os._exit(9)                    # the driver took the process down
        g = speed(cfg)
        return Measurement(OK, ms=1000.0 / g, gflops=g, ci_rel=0.01, reps=5)


def tune_and_die(space_args: tuple, log: str, budget: int, die: tuple) -> None:
    """The body of a tuning process that a kernel kills (run in a spawned process)."""
    import beast
    from beast.lang.devices import resolve_device
    from beast.tune import tune
    path, small, settings = space_args
    space = beast.load(path, device=resolve_device("k40c").replace(**small), settings=settings)
    tune(space, (64, 64, 64), budget=budget, log_path=log, backend=DyingBackend(die), compile_workers=1)


@dataclass(frozen=True)
class HostsimCupy:
    """The CuPy backend over the stand-in cupy of test_tune_gpu (kernels run by the host
    simulator), made in the worker; the tuning process compiles with the same stand-in's NVRTC."""

    settings: dict
    size: tuple

    def __call__(self):
        import sys
        from unit.tune.device.test_gpu import make_fake_cupy
        sys.modules["cupy"] = make_fake_cupy()
        from beast.tune.device.gpu import CupyBackend
        return CupyBackend(self.settings, self.size, max_samples=5, max_seconds=0.2)


@dataclass(frozen=True)
class StartsOnce(BadKernels):
    """BadKernels whose worker starts once: a later start fails as on a GPU the driver lost
    (``marker``: a file the first start creates)."""

    marker: str = ""

    def __call__(self) -> BadBackend:
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            from beast.errors import DeviceError
            raise DeviceError("no GPU found: the CUDA driver sees no device (stand-in)") from None
        return super().__call__()


#: kernels for the GPU check: one that spins on a flag nobody sets, one that writes 8 TiB past
#: its buffer (an illegal address, which leaves the CUDA context unusable)
BAD_CUDA = r'''
extern "C" __global__ void beast_hang(volatile int *flag) { while (flag[0] == 0) { } }
extern "C" __global__ void beast_illegal(volatile int *flag) { flag[threadIdx.x + (1ull << 41)] = 1; }
'''


class Misbehaving:
    """On a real GPU: the CuPy backend, except that the "configurations" ``"hang"``,
    ``"illegal"`` and ``"abort"`` run a bad kernel (or abort) instead."""

    def __init__(self, inner):
        self.inner = inner
        self.device_name = inner.device_name
        self.compute_capability = inner.compute_capability
        self.timing_cap_s = inner.timing_cap_s

    def compile(self, what):
        return what if isinstance(what, str) else self.inner.compile(what)

    def measure(self, compiled, best_ms=None):
        if not isinstance(compiled, str):
            return self.inner.measure(compiled, best_ms=best_ms)
        if compiled == "abort":
            os.abort()
        cupy = self.inner.cupy
        flag = cupy.zeros(4, dtype=cupy.int32)
        kernel = cupy.RawKernel(BAD_CUDA, f"beast_{compiled}")
        try:
            kernel((1,), (1,), (flag,))
            cupy.cuda.runtime.deviceSynchronize()
        except Exception as err:  # noqa: BLE001 - as the CuPy backend sees a failed launch
            return self.inner._failed("launch", err, {})
        return Measurement(OK, ms=1.0, gflops=1.0)

    def reference(self):
        return self.inner.reference()


@dataclass(frozen=True)
class MisbehavingCupy:
    """Picklable factory of :class:`Misbehaving` over a :class:`beast.tune.device.gpu.CupyFactory`."""

    inner: object

    def __call__(self) -> Misbehaving:
        return Misbehaving(self.inner())
