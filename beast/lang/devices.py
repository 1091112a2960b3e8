"""Device profiles: the hardware facts a search space prunes against.

A space file reads the device through attribute access (``device.max_threads_dim_x``).  The
field names are those of Luszczek et al. 2016: Fig. 8 (what ``cudaGetDeviceProperties``
reports) and Fig. 9 (what only NVIDIA's documentation gives, looked up by compute
capability).  ``resolve_device`` turns a user's ``--device`` argument into a profile: a
built-in name (``k40c``, the paper's device and the default; ``v100``, ``a100``, ``h100``,
``h200``, ...), a JSON file, or ``auto`` for the local GPU through CuPy.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import DeviceError

__all__ = [
    "ComputeCapability", "COMPUTE_CAPABILITIES", "compute_capability",
    "DeviceProfile", "PROFILES", "profile_names", "get_profile",
    "load_profile_json", "query_local_gpu", "resolve_device", "describe_devices",
    "profile_json", "DEFAULT_DEVICE",
]

K = 1024
KB = 1024


@dataclass(frozen=True)
class ComputeCapability:
    """NVIDIA's per-compute-capability limits (one row of the table below).

    Memory sizes are in bytes, register counts in 32-bit registers.  ``fp32_per_clock`` and
    ``fp64_per_clock`` are results of add/multiply/FMA per clock cycle per SM on the CUDA
    cores (tensor cores not included).
    """

    major: int
    minor: int
    max_blocks_per_sm: int
    max_warps_per_sm: int
    max_threads_per_sm: int
    registers_per_sm: int
    max_registers_per_block: int
    max_registers_per_thread: int
    shared_mem_per_sm: int
    shared_mem_per_block: int
    shared_mem_per_block_optin: int
    fp32_per_clock: int
    fp64_per_clock: int
    warp_size: int = 32
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)

    @property
    def version(self) -> str:
        """``"major.minor"``, e.g. ``"9.0"``."""
        return f"{self.major}.{self.minor}"


# Sources, all NVIDIA:
#   * CUDA Programming Guide (CUDA 13.x), section 5.1 "Compute Capabilities", Table 30 "Device and
#     Streaming Multiprocessor (SM) Information per Compute Capability" and Table 31 "Memory
#     Information per Compute Capability" (7.5 to 12.x, incl. the "Ratio of FP32 to FP64
#     Throughput" row), with the legacy CUDA C++ Programming Guide for CUDA 13.0, Table 27
#     "Technical Specifications per Compute Capability" (column 11.0; CUDA 12.8/12.9 called
#     that device 10.1).
#   * Legacy CUDA C++ Programming Guide (CUDA 10.x to 12.x), "Features and Technical
#     Specifications", for 3.0 to 7.2.
#   * CUDA C++ Programming Guide, "Arithmetic Instructions", table "Throughput of Native
#     Arithmetic Instructions (Number of Results per Clock Cycle per Multiprocessor)",
#     32- and 64-bit floating-point add, multiply, multiply-add (7.x: 32 FP64, 2 on 7.5).
# Every row: 1024 threads per block, block dims 1024 x 1024 x 64, warp size 32, and the default
# (static) shared memory limit per block of 48 KB; "opt-in" is the per-block maximum a kernel gets
# through cudaFuncSetAttribute (cudaDeviceProp.sharedMemPerBlockOptin).
_CC_ROWS = [
    # cc        blk/SM warps thr/SM regs/SM regs/blk regs/thr smem/SM   optin/blk  fp32 fp64
    ((3, 0),    16,    64,   2048,  64 * K, 64 * K,  63,      48 * KB,  48 * KB,   192, 8),
    ((3, 2),    16,    64,   2048,  64 * K, 32 * K,  255,     48 * KB,  48 * KB,   192, 8),
    ((3, 5),    16,    64,   2048,  64 * K, 64 * K,  255,     48 * KB,  48 * KB,   192, 64),
    ((3, 7),    16,    64,   2048, 128 * K, 64 * K,  255,    112 * KB,  48 * KB,   192, 64),
    ((5, 0),    32,    64,   2048,  64 * K, 64 * K,  255,     64 * KB,  48 * KB,   128, 4),
    ((5, 2),    32,    64,   2048,  64 * K, 64 * K,  255,     96 * KB,  48 * KB,   128, 4),
    ((5, 3),    32,    64,   2048,  64 * K, 32 * K,  255,     64 * KB,  48 * KB,   128, 4),
    ((6, 0),    32,    64,   2048,  64 * K, 64 * K,  255,     64 * KB,  48 * KB,   64,  32),
    ((6, 1),    32,    64,   2048,  64 * K, 64 * K,  255,     96 * KB,  48 * KB,   128, 4),
    ((6, 2),    32,    64,   2048,  64 * K, 32 * K,  255,     64 * KB,  48 * KB,   128, 4),
    ((7, 0),    32,    64,   2048,  64 * K, 64 * K,  255,     96 * KB,  96 * KB,   64,  32),
    ((7, 2),    32,    64,   2048,  64 * K, 64 * K,  255,     96 * KB,  96 * KB,   64,  32),
    ((7, 5),    16,    32,   1024,  64 * K, 64 * K,  255,     64 * KB,  64 * KB,   64,  2),
    ((8, 0),    32,    64,   2048,  64 * K, 64 * K,  255,    164 * KB, 163 * KB,   64,  32),
    ((8, 6),    16,    48,   1536,  64 * K, 64 * K,  255,    100 * KB,  99 * KB,   128, 2),
    ((8, 7),    16,    48,   1536,  64 * K, 64 * K,  255,    164 * KB, 163 * KB,   128, 2),
    ((8, 9),    24,    48,   1536,  64 * K, 64 * K,  255,    100 * KB,  99 * KB,   128, 2),
    ((9, 0),    32,    64,   2048,  64 * K, 64 * K,  255,    228 * KB, 227 * KB,   128, 64),
    ((10, 0),   32,    64,   2048,  64 * K, 64 * K,  255,    228 * KB, 227 * KB,   128, 64),
    # 10.1 is how CUDA 12.8/12.9 numbered the device CUDA 13 calls 11.0 (Jetson Thor).
    ((10, 1),   24,    48,   1536,  64 * K, 64 * K,  255,    228 * KB, 227 * KB,   128, 2),
    # 10.3 (B300): FP64 read from the 2:1 ratio the guide gives 9.0 to 10.3 together.
    ((10, 3),   32,    64,   2048,  64 * K, 64 * K,  255,    228 * KB, 227 * KB,   128, 64),
    ((11, 0),   24,    48,   1536,  64 * K, 64 * K,  255,    228 * KB, 227 * KB,   128, 2),
    ((12, 0),   24,    48,   1536,  64 * K, 64 * K,  255,    100 * KB,  99 * KB,   128, 2),
    ((12, 1),   24,    48,   1536,  64 * K, 64 * K,  255,    100 * KB,  99 * KB,   128, 2),
]

COMPUTE_CAPABILITIES: dict[tuple[int, int], ComputeCapability] = {
    (major, minor): ComputeCapability(
        major, minor, blocks, warps, threads, regs_sm, regs_blk, regs_thr, smem_sm, 48 * KB,
        optin, fp32, fp64)
    for (major, minor), blocks, warps, threads, regs_sm, regs_blk, regs_thr, smem_sm, optin, fp32, fp64
    in _CC_ROWS
}


def _cc_list() -> str:
    return ", ".join(cc.version for cc in COMPUTE_CAPABILITIES.values())


def compute_capability(major: int, minor: int) -> ComputeCapability:
    """The table row for compute capability ``major.minor``; DeviceError if NVIDIA's table has none."""
    try:
        return COMPUTE_CAPABILITIES[(major, minor)]
    except (KeyError, TypeError):
        raise DeviceError(f"unknown compute capability {major}.{minor}",
                          hint=f"known compute capabilities: {_cc_list()}") from None


def _did_you_mean(word: str, options) -> str | None:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


_PRECISIONS = {"single": "fp32", "float": "fp32", "fp32": "fp32",
               "double": "fp64", "fp64": "fp64"}


_NO_DEFAULT = object()


def _about(unit: str, meaning: str, default=_NO_DEFAULT):
    """A DeviceProfile field with its unit and one-line meaning (``field.metadata``)."""
    meta = {"unit": unit, "meaning": meaning}
    if default is _NO_DEFAULT:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class DeviceProfile:
    """Everything a space file may read about the target GPU.

    ``max_threads_per_block`` to ``float_size`` are the paper's Fig. 8 (device query; the
    paper omits ``max_threads_dim_z``), the next three its Fig. 9 (compute-capability lookup).  ``multi_processor_count``,
    ``clock_rate_khz`` (the SM clock ``cudaDeviceProp.clockRate`` reports) and
    ``memory_bandwidth_gbs`` describe the product and may be unknown (None).
    """

    # Each field's unit and meaning (``beast devices --fields``, :func:`describe_fields`): read
    # from here, so the listing cannot leave a field out.
    name: str = _about("-", "the profile's name: a built-in one, a JSON file's stem, or the local GPU's")
    max_threads_per_block: int = _about("threads", "most threads in one block (maxThreadsPerBlock)")
    max_threads_dim_x: int = _about("threads", "largest x dimension of a block (maxThreadsDim[0])")
    max_threads_dim_y: int = _about("threads", "largest y dimension of a block (maxThreadsDim[1])")
    max_threads_dim_z: int = _about("threads", "largest z dimension of a block (maxThreadsDim[2])")
    max_shared_mem_per_block: int = _about(
        "bytes", "shared memory of one block without opting in (sharedMemPerBlock)")
    warp_size: int = _about("threads", "threads of a warp (warpSize)")
    max_regs_per_block: int = _about("registers", "32-bit registers one block may use (regsPerBlock)")
    max_threads_per_multi_processor: int = _about(
        "threads", "resident threads of one SM (maxThreadsPerMultiProcessor)")
    cudamajor: int = _about("-", "compute capability, major (9 of 9.0)")
    cudaminor: int = _about("-", "compute capability, minor (0 of 9.0)")
    max_registers_per_multi_processor: int = _about(
        "registers", "32-bit registers of one SM (regsPerMultiprocessor)")
    max_shmem_per_multi_processor: int = _about(
        "bytes", "shared memory of one SM (sharedMemPerMultiprocessor)")
    float_size: int = _about("bytes", "size of a single-precision float: 4")
    max_blocks_per_multi_processor: int = _about(
        "blocks", "resident blocks of one SM (compute-capability table)")
    max_warps_per_multi_processor: int = _about(
        "warps", "resident warps of one SM (compute-capability table)")
    max_registers_per_thread: int = _about(
        "registers", "most 32-bit registers of one thread (compute-capability table)")
    max_shared_mem_per_block_optin: int = _about(
        "bytes", "shared memory one block may opt in to (sharedMemPerBlockOptin)")
    multi_processor_count: int | None = _about("SMs", "number of SMs (multiProcessorCount); None if unknown",
                                               None)
    clock_rate_khz: int | None = _about("kHz", "SM clock (clockRate); None if unknown", None)
    memory_bandwidth_gbs: float | None = _about("GB/s", "peak memory bandwidth; None if unknown", None)

    @classmethod
    def from_compute_capability(cls, major: int, minor: int, name: str | None = None, *,
                                multi_processor_count: int | None = None,
                                clock_rate_khz: int | None = None,
                                memory_bandwidth_gbs: float | None = None) -> "DeviceProfile":
        """A profile with every limit taken from the compute-capability table."""
        cc = compute_capability(major, minor)
        return cls(
            name=name or f"cc{major}{minor}",
            max_threads_per_block=cc.max_threads_per_block,
            max_threads_dim_x=cc.max_block_dims[0],
            max_threads_dim_y=cc.max_block_dims[1],
            max_threads_dim_z=cc.max_block_dims[2],
            max_shared_mem_per_block=cc.shared_mem_per_block,
            warp_size=cc.warp_size,
            max_regs_per_block=cc.max_registers_per_block,
            max_threads_per_multi_processor=cc.max_threads_per_sm,
            cudamajor=major,
            cudaminor=minor,
            max_registers_per_multi_processor=cc.registers_per_sm,
            max_shmem_per_multi_processor=cc.shared_mem_per_sm,
            float_size=4,
            max_blocks_per_multi_processor=cc.max_blocks_per_sm,
            max_warps_per_multi_processor=cc.max_warps_per_sm,
            max_registers_per_thread=cc.max_registers_per_thread,
            max_shared_mem_per_block_optin=cc.shared_mem_per_block_optin,
            multi_processor_count=multi_processor_count,
            clock_rate_khz=clock_rate_khz,
            memory_bandwidth_gbs=memory_bandwidth_gbs,
        )

    @property
    def cc(self) -> tuple[int, int]:
        """The compute capability as ``(major, minor)``."""
        return (self.cudamajor, self.cudaminor)

    def as_dict(self) -> dict:
        """All fields, in declaration order."""
        return dataclasses.asdict(self)

    def replace(self, **changes) -> "DeviceProfile":
        """A copy with some fields changed, e.g. ``k40c.replace(max_threads_dim_x=16)``."""
        fields = [f.name for f in dataclasses.fields(self)]
        unknown = [key for key in changes if key not in fields]
        if unknown:
            raise DeviceError(f"DeviceProfile has no field '{unknown[0]}'",
                              hint=_did_you_mean(unknown[0], fields))
        for key, value in changes.items():      # as a JSON profile's values are checked
            if key in _FIELDS:
                _check_value(key, value, {}, None)
        return dataclasses.replace(self, **changes)

    def peak_gflops(self, precision: str = "double") -> float | None:
        """Peak GFLOP/s of the CUDA cores: 2 (an FMA) x results/clock/SM x SMs x clock.

        ``precision`` is "single" or "double".  None when the SM count, the clock or the
        compute capability's throughput is unknown.  FP64 tensor-core peaks are not counted:
        cuBLAS DGEMM on A100 and H100 runs on FP64 tensor cores at twice this figure.
        """
        kind = _PRECISIONS.get(str(precision).lower())
        if kind is None:
            raise DeviceError(f"unknown precision '{precision}'",
                              hint="use 'single' or 'double'")
        cc = COMPUTE_CAPABILITIES.get(self.cc)
        if cc is None or not self.multi_processor_count or not self.clock_rate_khz:
            return None
        per_clock = cc.fp32_per_clock if kind == "fp32" else cc.fp64_per_clock
        return 2 * per_clock * self.multi_processor_count * self.clock_rate_khz / 1e6


_FIELDS = [f.name for f in dataclasses.fields(DeviceProfile)]
# what else a space file may read of a profile: (how it is written, unit, meaning)
_DERIVED = (("cc", "-", "the compute capability as (major, minor)"),
            ("peak_gflops(precision)", "GFLOP/s", "peak of the CUDA cores, 'single' or 'double'; "
             "None if the SM count or clock is unknown"))


def device_attributes() -> list[tuple[str, str, str]]:
    """(name, unit, meaning) of everything a space file can read of ``device()``: every field of
    :class:`DeviceProfile` (from its metadata), then ``cc`` and ``peak_gflops``."""
    return [(f.name, f.metadata["unit"], f.metadata["meaning"]) for f in dataclasses.fields(DeviceProfile)] \
        + list(_DERIVED)


def describe_fields() -> str:
    """The table of ``beast devices --fields``."""
    rows = [("attribute", "unit", "meaning")] + device_attributes()
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [f"{a.ljust(widths[0])}  {u.ljust(widths[1])}  {m}" for a, u, m in rows]
    lines.append("read them in a space file as dev = device(); dev.warp_size (--device picks the profile)")
    return "\n".join(lines)


def unknown_attribute(name: str) -> tuple[str, str]:
    """The message and hint of reading a device attribute that does not exist (a typo)."""
    names = [a.split("(")[0] for a, _, _ in device_attributes()]
    guess = _did_you_mean(name, names)
    listing = "`beast devices --fields` lists the device's attributes"
    return (f"the device has no attribute '{name}'", f"{guess} ({listing})" if guess else listing)
_OPTIONAL = ("multi_processor_count", "clock_rate_khz", "memory_bandwidth_gbs")

# Product facts (SM count, SM clock in kHz as cudaDeviceProp.clockRate reports it, memory
# bandwidth in GB/s) from NVIDIA's datasheets: Tesla K40 (15 SMX, 745 MHz base clock, as in
# the paper), Tesla P100 SXM2, Tesla V100 SXM2, A100 SXM4 80GB, H100 SXM5, H200 SXM,
# GeForce RTX 4090.  B200's 1980 MHz boost clock is from third-party listings.
_PRODUCTS = [
    # name       cc        SMs  clock kHz  GB/s
    ("k40c",    (3, 5),   15,  745_000,   288.0),
    ("p100",    (6, 0),   56,  1_480_000, 732.0),
    ("v100",    (7, 0),   80,  1_530_000, 900.0),
    ("a100",    (8, 0),   108, 1_410_000, 2039.0),
    ("h100",    (9, 0),   132, 1_980_000, 3350.0),
    ("h200",    (9, 0),   132, 1_980_000, 4800.0),
    ("rtx4090", (8, 9),   128, 2_520_000, 1008.0),
    ("b200",    (10, 0),  148, 1_980_000, 8000.0),
]

PROFILES: dict[str, DeviceProfile] = {
    name: DeviceProfile.from_compute_capability(
        major, minor, name, multi_processor_count=sms, clock_rate_khz=clock,
        memory_bandwidth_gbs=bandwidth)
    for name, (major, minor), sms, clock, bandwidth in _PRODUCTS
}

DEFAULT_DEVICE = "k40c"

_ALIASES = {"k40": "k40c", "teslak40c": "k40c", "teslak40": "k40c", "teslap100": "p100",
            "teslav100": "v100", "a100sxm4": "a100", "h100sxm": "h100", "h100sxm5": "h100",
            "h200sxm": "h200", "4090": "rtx4090", "geforcertx4090": "rtx4090"}


def profile_names() -> list[str]:
    """The names of the built-in profiles, sorted."""
    return sorted(PROFILES)


def get_profile(name: str) -> DeviceProfile:
    """A built-in profile by name; case and punctuation are ignored ("H100", "Tesla-K40c")."""
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    key = _ALIASES.get(key, key)
    if key in PROFILES:
        return PROFILES[key]
    hint = _did_you_mean(key, PROFILES)
    known = f"known devices: {', '.join(profile_names())}; or a .json profile, or 'auto'"
    raise DeviceError(f"unknown device '{name}'", hint=f"{hint} {known}" if hint else known)


def _locate(text: str, key: str) -> dict:
    match = re.search(r'"%s"\s*:' % re.escape(key), text)
    if not match:
        return {}
    lineno = text.count("\n", 0, match.start()) + 1
    line_start = text.rfind("\n", 0, match.start()) + 1
    col = match.start() - line_start
    return {"lineno": lineno, "col": col, "end_col": col + len(key) + 2,
            "source_line": text.splitlines()[lineno - 1]}


def _check_value(key: str, value, where: dict, filename: str):
    if key == "name":
        ok = isinstance(value, str)
        wanted = "a string"
    elif key == "memory_bandwidth_gbs":
        ok = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                               and value >= 0)
        wanted = "a non-negative number or null"
    else:
        ok = (value is None and key in _OPTIONAL) or (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0)
        wanted = "a non-negative integer" + (" or null" if key in _OPTIONAL else "")
    if not ok:
        raise DeviceError(f"'{key}' must be {wanted}, not {json.dumps(value)}",
                          filename=filename, **where)


def load_profile_json(path) -> DeviceProfile:
    """Read a device profile from a JSON object keyed by the paper's Fig. 8 field names.

    ``cudamajor`` and ``cudaminor`` are required.  Fields the file leaves out are filled from
    the compute-capability table; the three Fig. 9 values may be given to override it.  A
    compute capability the table does not know is accepted only if the file gives every
    field itself.  Unknown keys, wrong types and bad JSON raise DeviceError at the file.
    """
    filename = os.fspath(path)
    try:
        text = Path(filename).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise DeviceError(f"cannot read device profile: {reason}", filename=filename) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        lines = text.splitlines()
        line = lines[err.lineno - 1] if 0 < err.lineno <= len(lines) else None
        raise DeviceError(f"invalid JSON: {err.msg}", filename=filename, lineno=err.lineno,
                          col=err.colno - 1, source_line=line) from None
    if not isinstance(data, dict):
        raise DeviceError("a device profile must be a JSON object of field: value",
                          filename=filename, lineno=1)

    unknown = [key for key in data if key not in _FIELDS]
    if unknown:
        guesses = {key: _did_you_mean(key, _FIELDS) for key in unknown}
        hints = [guess if len(unknown) == 1 else f"'{key}': {guess}"
                 for key, guess in guesses.items() if guess]
        known = "fields: " + ", ".join(_FIELDS)
        raise DeviceError(
            f"unknown field{'s' if len(unknown) > 1 else ''} in device profile: "
            + ", ".join(f"'{key}'" for key in unknown),
            filename=filename, **_locate(text, unknown[0]),
            hint="; ".join(hints) if hints else known)
    for key, value in data.items():
        _check_value(key, value, _locate(text, key), filename)

    missing_cc = [key for key in ("cudamajor", "cudaminor") if key not in data]
    if missing_cc:
        raise DeviceError(f"device profile lacks {' and '.join(missing_cc)}",
                          filename=filename, hint="the compute capability is required, "
                          'e.g. "cudamajor": 9, "cudaminor": 0')

    major, minor = data["cudamajor"], data["cudaminor"]
    fields = {"name": Path(filename).stem, "float_size": 4}
    if (major, minor) in COMPUTE_CAPABILITIES:
        fields.update(DeviceProfile.from_compute_capability(major, minor).as_dict())
        fields["name"] = Path(filename).stem
    fields.update(data)
    if "max_shared_mem_per_block_optin" not in fields and "max_shared_mem_per_block" in fields:
        fields["max_shared_mem_per_block_optin"] = fields["max_shared_mem_per_block"]
    missing = [key for key in _FIELDS if key not in fields and key not in _OPTIONAL]
    if missing:
        raise DeviceError(
            f"unknown compute capability {major}.{minor}: the table cannot fill "
            + ", ".join(missing), filename=filename,
            hint=f"give these fields in the file, or use a known compute capability: "
                 f"{_cc_list()}")
    return DeviceProfile(**fields)


def query_local_gpu() -> DeviceProfile:
    """The profile of CUDA device 0, read through CuPy; Fig. 9 values come from the table.

    Raises DeviceError("no GPU found: ...") when CuPy is missing, no driver or no device is
    present.  For a compute capability the table does not know, the Fig. 9 values come from
    the device's own attributes (255 registers per thread).
    """
    try:
        import cupy
        runtime = cupy.cuda.runtime
    except ImportError:
        raise DeviceError("no GPU found: CuPy is not installed",
                          hint="install CuPy (pip install cupy-cuda12x), or name a device: "
                               + ", ".join(profile_names())) from None
    except Exception as err:
        raise DeviceError(f"no GPU found: CuPy cannot load CUDA ({err})") from None
    try:
        count = runtime.getDeviceCount()
    except Exception as err:
        raise DeviceError(f"no GPU found: the CUDA driver reports: {err}") from None
    if count < 1:
        raise DeviceError("no GPU found: the CUDA driver sees no device")
    try:
        props = runtime.getDeviceProperties(0)
        return _profile_from_properties(props)
    except DeviceError:
        raise
    except Exception as err:
        raise DeviceError(f"no GPU found: cannot read the properties of device 0 ({err})") from None


def _profile_from_properties(props: dict) -> DeviceProfile:
    name = props.get("name", b"gpu0")
    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    major, minor = int(props["major"]), int(props["minor"])
    warp = int(props["warpSize"])
    threads_per_sm = int(props["maxThreadsPerMultiProcessor"])
    cc = COMPUTE_CAPABILITIES.get((major, minor))
    clock = props.get("clockRate") or None
    mem_clock, bus = props.get("memoryClockRate"), props.get("memoryBusWidth")
    bandwidth = 2 * mem_clock * 1e3 * bus / 8 / 1e9 if mem_clock and bus else None
    dims = props["maxThreadsDim"]
    return DeviceProfile(
        name=name.rstrip("\x00").strip(),
        max_threads_per_block=int(props["maxThreadsPerBlock"]),
        max_threads_dim_x=int(dims[0]),
        max_threads_dim_y=int(dims[1]),
        max_threads_dim_z=int(dims[2]),
        max_shared_mem_per_block=int(props["sharedMemPerBlock"]),
        warp_size=warp,
        max_regs_per_block=int(props["regsPerBlock"]),
        max_threads_per_multi_processor=threads_per_sm,
        cudamajor=major,
        cudaminor=minor,
        max_registers_per_multi_processor=int(props["regsPerMultiprocessor"]),
        max_shmem_per_multi_processor=int(props["sharedMemPerMultiprocessor"]),
        float_size=4,
        max_blocks_per_multi_processor=(cc.max_blocks_per_sm if cc
                                        else int(props["maxBlocksPerMultiProcessor"])),
        max_warps_per_multi_processor=cc.max_warps_per_sm if cc else threads_per_sm // warp,
        max_registers_per_thread=cc.max_registers_per_thread if cc else 255,
        max_shared_mem_per_block_optin=int(props.get("sharedMemPerBlockOptin")
                                           or props["sharedMemPerBlock"]),
        multi_processor_count=int(props["multiProcessorCount"]),
        clock_rate_khz=int(clock) if clock else None,
        memory_bandwidth_gbs=round(bandwidth, 1) if bandwidth else None,
    )


def resolve_device(spec=None) -> DeviceProfile:
    """Turn a ``--device`` argument into a profile.

    None gives the paper's Tesla K40c; a DeviceProfile is returned as is; a string is
    ``"auto"`` (the local GPU), a path to a JSON profile (ending ``.json`` or an existing
    file), or a built-in profile name.
    """
    if spec is None:
        return PROFILES[DEFAULT_DEVICE]
    if isinstance(spec, DeviceProfile):
        return spec
    if isinstance(spec, os.PathLike):
        return load_profile_json(spec)
    if not isinstance(spec, str):
        raise DeviceError(f"a device is a name, a .json path or 'auto', not {type(spec).__name__}")
    text = spec.strip()
    if text.lower() == "auto":
        return query_local_gpu()
    if text.lower().endswith(".json") or os.path.isfile(text):
        return load_profile_json(text)
    return get_profile(text)


def profile_json(spec) -> str:
    """The profile ``spec`` names (as ``--device`` takes it: a built-in name, a JSON file or
    ``auto``) as the JSON that :func:`load_profile_json` reads back (``beast devices --dump``):
    every field but ``name``, which a file takes from its stem, in declaration order."""
    fields = resolve_device(spec).as_dict()
    del fields["name"]
    return json.dumps(fields, indent=2) + "\n"


def _kb(nbytes: int) -> str:
    return f"{nbytes // KB}" if nbytes % KB == 0 else f"{nbytes / KB:.1f}"


def describe_devices(query_local: bool = True) -> str:
    """A table of the built-in profiles and a last line about the local GPU (``beast devices``)."""
    header = ("name", "cc", "SMs", "blk/SM", "warps/SM", "regs/SM", "regs/thr",
              "smem/SM KB", "smem/blk KB", "fp64 GF/s", "GB/s")
    rows = [header]
    for name in profile_names():
        p = PROFILES[name]
        peak = p.peak_gflops("double")
        rows.append((
            name + (" (default)" if name == DEFAULT_DEVICE else ""),
            f"{p.cudamajor}.{p.cudaminor}", str(p.multi_processor_count or "?"),
            str(p.max_blocks_per_multi_processor), str(p.max_warps_per_multi_processor),
            str(p.max_registers_per_multi_processor), str(p.max_registers_per_thread),
            _kb(p.max_shmem_per_multi_processor),
            f"{_kb(p.max_shared_mem_per_block)}/{_kb(p.max_shared_mem_per_block_optin)}",
            f"{peak:.0f}" if peak else "?",
            f"{p.memory_bandwidth_gbs:g}" if p.memory_bandwidth_gbs else "?"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
             for row in rows]
    lines.append("smem/blk: default/opt-in per block; fp64 GF/s: CUDA cores, no tensor cores")
    if query_local:
        try:
            local = query_local_gpu()
            lines.append(f"local GPU: {local.name} (cc {local.cudamajor}.{local.cudaminor}, "
                         f"{local.multi_processor_count} SMs); use --device auto")
        except DeviceError as err:
            lines.append(f"local GPU: none ({err.message})")
    return "\n".join(lines)
