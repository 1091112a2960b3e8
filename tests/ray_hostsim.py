"""The "device" of the Ray tests: CupyBackend over the stand-in cupy module of test_tune_gpu (the
generated kernels run on CPU threads through beast.tune.hostsim), made inside each Ray worker.

Not a test module: Ray workers import it (the tests put this directory on their PYTHONPATH).
It can make one worker die in the middle of a measurement and keeps a journal of every
measurement that completed, so that a test can check that nothing was measured twice."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

from beast.tune.measure import FatalBackendError


class JournalingBackend:
    """Wraps a backend: appends ``{"pid", "config"}`` to ``journal`` after each completed measurement.

    The first worker to start its ``fail_at``-th measurement exits (claiming ``die_marker``);
    the next one to get there raises FatalBackendError (claiming ``fatal_marker``).  Measuring
    the ``poison`` configuration kills any worker."""

    def __init__(self, inner, journal: str, die_marker: str | None, fatal_marker: str | None,
                 fail_at: int | None, poison: dict | None = None):
        self.inner, self.journal = inner, journal
        self.die_marker, self.fatal_marker, self.fail_at = die_marker, fatal_marker, fail_at
        self.poison = poison
        self.device_name = inner.device_name
        self.started = 0

    def compile(self, config):
        return self.inner.compile(config)

    def measure(self, compiled):
        self.started += 1
        if self.poison is not None and compiled.config == self.poison:
            os._exit(1)                            # this configuration kills every worker
        if self.fail_at is not None and self.started == self.fail_at:
            if self.die_marker and claim(self.die_marker):
                os._exit(1)                        # killed in the middle of a measurement
            if self.fatal_marker and claim(self.fatal_marker):
                raise FatalBackendError("the CUDA context is unusable after launch: illegal address (simulated)")
        meas = self.inner.measure(compiled)
        line = json.dumps({"pid": os.getpid(), "config": compiled.config}) + "\n"
        fd = os.open(self.journal, os.O_CREAT | os.O_APPEND | os.O_WRONLY)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        return meas

    def reference(self):
        return self.inner.reference()


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
    """Picklable backend factory for :func:`beast.tune.ray_runner.tune_ray`."""

    settings: dict
    size: tuple
    journal: str
    die_marker: str | None = None
    fatal_marker: str | None = None
    fail_at: int | None = None
    poison: dict | None = None

    def __call__(self):
        from test_tune_gpu import make_fake_cupy
        sys.modules["cupy"] = make_fake_cupy()
        from beast.tune.gpu import CupyBackend
        inner = CupyBackend(self.settings, self.size, max_samples=5, max_seconds=0.2)
        return JournalingBackend(inner, self.journal, self.die_marker, self.fatal_marker, self.fail_at,
                                self.poison)


def read_journal(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
