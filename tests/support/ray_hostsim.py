"""The "device" of the Ray tests: CupyBackend over the stand-in cupy module of test_tune_gpu (the
generated kernels run on CPU threads through beast.tune.sim.hostsim), made inside each Ray worker.

Not a test module: Ray workers import it (the tests put this directory on their PYTHONPATH).
It can make one worker die in the middle of a measurement and keeps a journal of every
measurement that completed, so that a test can check that nothing was measured twice.  The
compiles run where tune_ray puts them, in Ray tasks on CPU workers: there the stand-in cupy has
no device at all (only its NVRTC, which builds the host simulator's shared library as the
"cubin"), a journal records each compile, and a compile task can be made to die."""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, replace

from beast.tune.device.measure import FatalBackendError


class JournalingBackend:
    """Wraps a backend: appends ``{"pid", "config", "t0", "t1"}`` to ``journal`` after each
    completed measurement (``t0``/``t1``: its start and end, seconds since the epoch).

    The first worker to start its ``fail_at``-th measurement exits (claiming ``die_marker``);
    the next one to get there raises FatalBackendError (claiming ``fatal_marker``).  Measuring
    the ``poison`` configuration kills any worker."""

    def __init__(self, inner, journal: str, die_marker: str | None, fatal_marker: str | None,
                 fail_at: int | None, poison: dict | None = None, compile_kw: dict | None = None):
        self.inner, self.journal = inner, journal
        self.die_marker, self.fatal_marker, self.fail_at = die_marker, fatal_marker, fail_at
        self.poison = poison
        self.compile_kw = compile_kw or {}
        self.device_name = inner.device_name
        self.started = 0

    def compile(self, config):
        return self.inner.compile(config)

    def compiler(self):
        return JournalingCompiler(self.inner.compiler(), self.journal + ".compiles", **self.compile_kw)

    def load(self, artifact):
        return self.inner.load(artifact)

    def measure(self, compiled):
        self.started += 1
        if self.poison is not None and compiled.config == self.poison:
            os._exit(1)                            # this configuration kills every worker
        if self.fail_at is not None and self.started == self.fail_at:
            if self.die_marker and claim(self.die_marker):
                os._exit(1)                        # killed in the middle of a measurement
            if self.fatal_marker and claim(self.fatal_marker):
                raise FatalBackendError("the CUDA context is unusable after launch: illegal address (simulated)")
        t0 = time.time()
        meas = self.inner.measure(compiled)
        append(self.journal, {"pid": os.getpid(), "config": compiled.config, "t0": t0, "t1": time.time()})
        return meas

    def reference(self):
        return self.inner.reference()

    def close(self):
        self.inner.close()


@dataclass(frozen=True)
class JournalingCompiler:
    """Wraps the backend's compiler on its way to the CPU workers: there it installs a stand-in
    cupy without a device, journals ``{"pid", "gpus", "config", "ok", "t0", "t1"}`` per compile,
    and dies (``os._exit``) on ``poison`` or when it is the first to claim ``die_marker``.
    ``broken`` is compiled with an option that makes the compiler fail; ``env_error`` makes
    every compile raise as a CPU node without CuPy would; ``hang`` never returns; ``ready`` holds
    artefacts built before the run, returned at once."""

    inner: object
    journal: str
    die_marker: str | None = None
    poison: dict | None = None
    broken: dict | None = None
    env_error: bool = False
    hang: dict | None = None
    ready: tuple = ()

    def build(self, config):
        if self.env_error:
            raise ImportError("no NVRTC here (simulated)")
        if self.hang is not None and config == self.hang:
            time.sleep(3600)                         # a compiler that never returns
        for items, artifact in self.ready:           # compiled before the run: no time on its clock
            if dict(items) == dict(config):
                return artifact
        if "cupy" not in sys.modules:
            from unit.tune.device.test_gpu import make_fake_cupy
            sys.modules["cupy"] = make_fake_cupy(devices=0)
        if self.poison is not None and config == self.poison:
            os._exit(1)
        if self.die_marker and claim(self.die_marker):
            os._exit(1)                              # killed in the middle of a compile
        compiler = self.inner
        if config == self.broken:
            compiler = replace(compiler, options=("-Dbeast_gemm=1",))
        import ray
        record = {"pid": os.getpid(), "gpus": list(ray.get_gpu_ids()), "config": dict(config), "ok": False,
                  "t0": time.time()}
        try:
            artifact = compiler.build(config)
            record["ok"] = True
        finally:
            record["t1"] = time.time()
            append(self.journal, record)
        return artifact


def append(path: str, record: dict) -> None:
    """One JSON line, appended atomically (O_APPEND) by whichever process."""
    fd = os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
    finally:
        os.close(fd)


def claim(path: str) -> bool:
    """Create ``path`` holding this process's id; True for the one process that created it."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


@dataclass(frozen=True)
class HostsimFactory:
    """Picklable backend factory for :func:`beast.tune.driver.ray.tune_ray`."""

    settings: dict
    size: tuple
    journal: str
    die_marker: str | None = None
    fatal_marker: str | None = None
    fail_at: int | None = None
    poison: dict | None = None
    compile_die_marker: str | None = None
    compile_poison: dict | None = None
    compile_broken: dict | None = None
    compile_env_error: bool = False
    compile_hang: dict | None = None
    compile_ready: tuple = ()            # ((config items, artefact), ...): built already, returned at once
    family: str = "gemm"
    tmpdir: str | None = None            # the worker's temporary directory (tempfile.tempdir)

    def __call__(self):
        if self.tmpdir is not None:
            import tempfile
            tempfile.tempdir = self.tmpdir
        from unit.tune.device.test_gpu import make_fake_cupy
        sys.modules["cupy"] = make_fake_cupy()
        from beast.tune.device.gpu import CupyBackend
        inner = CupyBackend(self.settings, self.size, max_samples=5, max_seconds=0.2, family=self.family)
        return JournalingBackend(inner, self.journal, self.die_marker, self.fatal_marker, self.fail_at,
                                 self.poison, dict(die_marker=self.compile_die_marker, poison=self.compile_poison,
                                                   broken=self.compile_broken, env_error=self.compile_env_error,
                                                   hang=self.compile_hang, ready=self.compile_ready))


def read_journal(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
