"""Shared helpers: backends (skipped while not available), space files in temporary directories,
running the ``beast`` command."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

# Compiled enumerators of the test spaces go to a cache of this run, not the user's cache.
if "BEAST_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile
    _cache = tempfile.mkdtemp(prefix="beast-test-cache-")
    os.environ["BEAST_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, True)

# auto's background C builds prepare the next run; in a run whose cache starts empty they are a
# compiler process per mid-size space beside the tests. test_cold_start, which checks them,
# restores the default in its fixture.
os.environ.setdefault("BEAST_BACKGROUND_BUILD", "0")

# The suite starts hundreds of Python processes (the beast command, Ray workers, builds); where
# PYTHONDONTWRITEBYTECODE is set, each compiled beast's modules again (0.2 s apiece). The run lets
# Python keep their bytecode as it does by default (__pycache__ folders, ignored by git); a
# PYTHONPYCACHEPREFIX instead was slower, since it also hides the installed packages' bytecode.
# The test processes themselves too: each would otherwise compile scikit-learn from source.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
SUPPORT = os.path.join(TESTS, "support")     # helpers the tests import (oracle, spacegen, stand-ins)
for p in (SUPPORT, TESTS, ROOT):
    if p not in sys.path:
        sys.path.insert(0, p)

from beast.errors import BeastError  # noqa: E402
from beast.runtime import get_backend  # noqa: E402

BACKENDS = ("python", "c", "lua")
SPACES = os.path.join(ROOT, "spaces")


def backend_available(name: str) -> bool:
    """False only while beast says the backend 'is not available'; any other failure is a bug."""
    try:
        get_backend(name)
    except BeastError as err:
        if "not available" in err.message:
            return False
        raise
    return True


def available_backends() -> list:
    return [b for b in BACKENDS if backend_available(b)]


def have_cc() -> bool:
    """True when the C backend finds a working C compiler."""
    from beast.runtime.c import enumerator as c_backend
    try:
        c_backend.compiler()
        return True
    except BeastError:
        return False


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each backend in turn; skipped (not failed) while beast reports it 'not available'."""
    if not backend_available(request.param):
        pytest.skip(f"the {request.param} backend is not available in this version of beast")
    return request.param


def write_space(directory, text: str, name: str = "space.py") -> str:
    """Write a (dedented) space file into ``directory``; return its path."""
    path = os.path.join(os.fspath(directory), name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(textwrap.dedent(text).lstrip("\n"))
    return path


@pytest.fixture
def space_file(tmp_path):
    """``space_file(text, name='space.py')`` -> path of a new space file."""
    return lambda text, name="space.py": write_space(tmp_path, text, name)


def run_beast(*args, cwd=None, env=None, timeout=120):
    """``python -m beast ARGS`` in a subprocess: CompletedProcess with text stdout/stderr."""
    full_env = dict(os.environ)
    full_env.pop("BEAST_DEBUG", None)
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "beast", *map(str, args)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def rows(array) -> list:
    """A structured array's rows as a list of tuples of Python ints."""
    names = array.dtype.names or ()
    cols = [array[n].tolist() for n in names]
    return list(zip(*cols))


def host_case(host, k, size, rng, ld_multiple=4):
    """Run kernel k on small integer matrices (exact in floating point): (result, exact)."""
    st = k.settings
    m, n, kk = size
    import numpy as np
    dtype = np.dtype(st.numpy_dtype)

    def ints(shape):
        x = rng.integers(-3, 4, size=shape).astype(dtype)
        return x + 1j * rng.integers(-3, 4, size=shape) if st.is_complex else x

    a, b, c = ints((m, kk)), ints((kk, n)), ints((m, n))
    alpha, beta = (2, -1) if not st.is_complex else (2 - 1j, 1 + 1j)
    got = host.gemm(k.name, a, b, c, alpha=alpha, beta=beta, ld_multiple=ld_multiple)
    return got, alpha * (a.astype(np.complex128) @ b) + beta * c


def pytest_collection_modifyitems(config, items):
    """The Ray tests (the longest, much of it waiting on timeouts and workers) first, so that the
    short ones fill the end of the run instead of one worker finishing them alone."""
    items.sort(key=lambda item: item.path.name != "test_tune_ray.py")


# ------------------------------------------------------------------ a guard against runaway memory

def _default_memory_limit_gb() -> float:
    try:
        return min(8.0, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30 / 2)
    except (ValueError, OSError, AttributeError):
        return 8.0


#: the resident memory (GiB) past which a test process stops itself, naming the test: 8 GiB, or
#: half the machine's memory where that is less (the suite's largest process holds about 1.6 GiB)
MEMORY_LIMIT_GB = float(os.environ.get("BEAST_TEST_MEMORY_GB") or _default_memory_limit_gb())
_current_test = ["(collecting)"]


def _memory_guard():
    """Once a second: past MEMORY_LIMIT_GB resident, write the running test and every thread's
    stack to stderr and exit.  A runaway test (once one grew an xdist worker to 24 GB) would
    otherwise be killed by the kernel's OOM killer with nothing said, or stall the machine."""
    import faulthandler
    import time
    page = os.sysconf("SC_PAGE_SIZE")
    while True:
        time.sleep(1.0)
        try:
            with open("/proc/self/statm") as fh:
                resident = int(fh.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            return
        if resident > MEMORY_LIMIT_GB * 2**30:
            err = sys.__stderr__
            err.write(f"\n{_current_test[0]}: this test process holds {resident / 2**30:.1f} GiB, past the "
                      f"suite's limit of {MEMORY_LIMIT_GB:g} GiB (BEAST_TEST_MEMORY_GB); stopping it. Stacks:\n")
            faulthandler.dump_traceback(file=err, all_threads=True)
            err.flush()
            os._exit(70)


def pytest_configure(config):
    if os.path.exists("/proc/self/statm") and MEMORY_LIMIT_GB > 0:
        import threading
        threading.Thread(target=_memory_guard, name="beast-memory-guard", daemon=True).start()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _current_test[0] = item.nodeid
