"""The paper's GEMM template without its CUDA text: what a configuration means.

:class:`GemmSettings` (the variant a space's settings select), :class:`GemmLayout` (one
configuration's tile, thread grids and shared memory, with the checks the kernel needs),
:func:`read_parameters` (a configuration's integers, by name, for both kernel families) and
:func:`vec_type` (the CUDA type of a vector of elements).  :mod:`beast.tune.kernels.paper` writes the
kernel from them, describes the parameters in its docstring and re-exports these names.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...errors import BeastError


# --------------------------------------------------------------------------- settings

@dataclass(frozen=True)
class GemmSettings:
    """The space's settings that select the kernel variant (Fig. 10)."""

    precision: str      # "single" | "double"
    arithmetic: str     # "real" | "complex"
    trans_a: int        # 0 | 1
    trans_b: int        # 0 | 1

    @classmethod
    def from_mapping(cls, settings: Mapping) -> "GemmSettings":
        """Read and check ``precision``, ``arithmetic``, ``trans_a``, ``trans_b`` from a settings dict."""
        wanted = ("precision", "arithmetic", "trans_a", "trans_b")
        missing = [n for n in wanted if n not in settings]
        if missing:
            raise BeastError(
                "the GEMM kernel needs the setting(s) " + ", ".join(missing)
                + " but the space does not declare them",
                hint="the GEMM space declares precision, arithmetic, trans_a and trans_b (Fig. 10)")
        precision, arithmetic = settings["precision"], settings["arithmetic"]
        if precision not in ("single", "double"):
            raise BeastError(f"setting precision={precision!r}: the GEMM kernel supports 'single' or 'double'")
        if arithmetic not in ("real", "complex"):
            raise BeastError(f"setting arithmetic={arithmetic!r}: the GEMM kernel supports 'real' or 'complex'")
        trans = []
        for name in ("trans_a", "trans_b"):
            value = settings[name]
            if isinstance(value, bool) or value not in (0, 1):
                raise BeastError(f"setting {name}={value!r}: the GEMM kernel supports 0 or 1")
            trans.append(int(value))
        return cls(precision, arithmetic, trans[0], trans[1])

    @property
    def is_complex(self) -> bool:
        return self.arithmetic == "complex"

    @property
    def letter(self) -> str:
        """BLAS precision letter: s, d, c or z."""
        return {("single", "real"): "s", ("double", "real"): "d",
                ("single", "complex"): "c", ("double", "complex"): "z"}[(self.precision, self.arithmetic)]

    @property
    def routine(self) -> str:
        """BLAS-style name, e.g. ``dgemm_NT``."""
        return f"{self.letter}gemm_{'NT'[self.trans_a]}{'NT'[self.trans_b]}"

    @property
    def real_type(self) -> str:
        return "float" if self.precision == "single" else "double"

    @property
    def elem_type(self) -> str:
        """CUDA element type: float, double, float2 or double2 (complex as (re, im) pairs)."""
        return self.real_type + ("2" if self.is_complex else "")

    @property
    def itemsize(self) -> int:
        return (4 if self.precision == "single" else 8) * (2 if self.is_complex else 1)

    @property
    def numpy_dtype(self) -> str:
        return {"s": "float32", "d": "float64", "c": "complex64", "z": "complex128"}[self.letter]

    @property
    def eps(self) -> float:
        """Unit roundoff of the real type."""
        return 2.0 ** -24 if self.precision == "single" else 2.0 ** -53

    def as_dict(self) -> dict:
        return {"precision": self.precision, "arithmetic": self.arithmetic,
                "trans_a": self.trans_a, "trans_b": self.trans_b}


# --------------------------------------------------------------------------- parameters

class _ConfigReader:
    """Reads parameters by name from a configuration mapping, collecting every missing name."""

    def __init__(self, config: Mapping):
        self.config = config
        self.missing: list[str] = []

    def get(self, name: str) -> int:
        if name not in self.config:
            self.missing.append(name)
            return 1
        value = self.config[name]
        try:
            as_int = int(value)
        except (TypeError, ValueError):
            raise BeastError(f"GEMM parameter {name}={value!r} is not an integer") from None
        if as_int != value:
            raise BeastError(f"GEMM parameter {name}={value!r} is not an integer")
        return as_int


def read_parameters(config: Mapping, required, optional=(), *, kernel: str, space: str) -> dict[str, int]:
    """The integer parameters ``required`` (and those of ``optional`` that ``config`` has), read by
    name; every missing name is reported at once, saying that ``kernel`` needs the iterators of
    ``space``."""
    reader = _ConfigReader(config)
    values = {f: reader.get(f) for f in required}
    values.update({f: reader.get(f) for f in optional if f in config})
    if reader.missing:
        raise BeastError(
            f"the {kernel} needs parameter(s) " + ", ".join(reader.missing)
            + " that the configuration does not have",
            hint=f"the space must declare the iterators of {space}"
                 f" (it has: {', '.join(map(str, config)) or 'none'})")
    return values


@dataclass(frozen=True)
class GemmLayout:
    """One configuration of the GEMM template with every derived constant the kernel uses.

    Built by :meth:`from_config`, which reads the parameters by name (Fig. 11 names) from a
    configuration mapping such as a row of the space's enumeration.
    """

    settings: GemmSettings
    dim_m: int
    dim_n: int
    blk_m: int
    blk_n: int
    blk_k: int
    dim_vec: int
    vec_mul: int
    dim_m_a: int
    dim_n_a: int
    dim_m_b: int
    dim_n_b: int
    tex_a: int
    tex_b: int
    shmem_l1: int
    shmem_banks: int
    # not in the paper (OPTIONAL: read when the configuration has them)
    pad_a: int = 0
    pad_b: int = 0
    smem_buffers: int = 1
    async_copy: int = 0

    @classmethod
    def from_config(cls, config: Mapping, settings: GemmSettings | Mapping) -> "GemmLayout":
        """Read the GEMM parameters from ``config`` (name -> int); report all missing names at once.
        The switches of :data:`OPTIONAL` are read when present and keep the paper's value otherwise."""
        if not isinstance(settings, GemmSettings):
            settings = GemmSettings.from_mapping(settings)
        values = read_parameters(config, cls.required_names(), OPTIONAL, kernel="GEMM kernel",
                                 space="Fig. 11 (spaces/gemm.py)")
        layout = cls(settings=settings, **values)
        layout._check()
        return layout

    @classmethod
    def required_names(cls) -> tuple[str, ...]:
        """The parameter names the template reads (those of Fig. 11)."""
        return tuple(f for f in cls.__dataclass_fields__ if f != "settings" and f not in OPTIONAL)

    @property
    def extended(self) -> bool:
        """Whether a switch beyond the paper is set (else the text is the paper's kernel)."""
        return any(getattr(self, f) != default for f, default in OPTIONAL.items())

    def _check(self) -> None:
        for name in ("dim_m", "dim_n", "blk_m", "blk_n", "blk_k", "dim_vec",
                     "dim_m_a", "dim_n_a", "dim_m_b", "dim_n_b"):
            if getattr(self, name) < 1:
                raise BeastError(f"GEMM parameter {name}={getattr(self, name)} must be at least 1")
        for name in ("vec_mul", "tex_a", "tex_b", "shmem_l1", "shmem_banks"):
            if getattr(self, name) not in (0, 1):
                raise BeastError(f"GEMM parameter {name}={getattr(self, name)} must be 0 or 1")
        if self.blk_m < self.dim_m or self.blk_n < self.dim_n:
            raise BeastError(f"blk_m x blk_n = {self.blk_m} x {self.blk_n} is smaller than the thread grid "
                             f"dim_m x dim_n = {self.dim_m} x {self.dim_n}")
        if vec_type(self.settings, self.dim_vec) is None:
            raise BeastError(f"dim_vec={self.dim_vec} has no CUDA vector type for {self.settings.elem_type} "
                             "(vector loads are 1, 2 or 4 elements of at most 16 bytes)")
        if self.pad_a < 0 or self.pad_b < 0:
            raise BeastError(f"padding pad_a={self.pad_a}, pad_b={self.pad_b} must not be negative")
        if self.smem_buffers not in (1, 2) or self.async_copy not in (0, 1):
            raise BeastError(f"smem_buffers={self.smem_buffers} must be 1 or 2 and async_copy={self.async_copy} 0 or 1")
        if self.async_copy and self.smem_buffers != 2:
            raise BeastError("async_copy=1 copies the next stripe into the other buffer: it needs smem_buffers=2")
        if self.pad_a % self.dim_vec or self.pad_b % self.dim_vec:
            raise BeastError(f"padding pad_a={self.pad_a}, pad_b={self.pad_b} is not a multiple of dim_vec="
                             f"{self.dim_vec}: vector accesses to shared memory would be misaligned")

    # ---- derived constants (the names match the generated source)
    @property
    def threads(self) -> int:
        return self.dim_m * self.dim_n

    @property
    def thr_m(self) -> int:
        return self.blk_m // self.dim_m

    @property
    def thr_n(self) -> int:
        return self.blk_n // self.dim_n

    @property
    def vec_a(self) -> int:
        """Width of the shared-memory reads of A in the multiply phase (1 = scalar)."""
        return _pow2_width(self.dim_vec, self.thr_m) if self.vec_mul else 1

    @property
    def vec_b(self) -> int:
        """Width of the shared-memory reads of B in the multiply phase (1 = scalar)."""
        return _pow2_width(self.dim_vec, self.thr_n) if self.vec_mul else 1

    # A stripe: contiguous extent (along the vector loads) and strided extent
    @property
    def a_ce(self) -> int:
        return self.blk_k if self.settings.trans_a else self.blk_m

    @property
    def a_se(self) -> int:
        return self.blk_m if self.settings.trans_a else self.blk_k

    @property
    def a_i(self) -> int:
        """Vector loads per thread along A's contiguous dimension, per stripe: the loop
        ``for (c = 0; c < a_ce; c += dim_m_a * dim_vec)``, so ceil(a_ce / (dim_m_a * dim_vec))."""
        return -(-self.a_ce // (self.dim_m_a * self.dim_vec))

    @property
    def a_j(self) -> int:
        """Loads per thread along A's strided dimension, per stripe: ceil(a_se / dim_n_a)."""
        return -(-self.a_se // self.dim_n_a)

    @property
    def b_ce(self) -> int:
        return self.blk_n if self.settings.trans_b else self.blk_k

    @property
    def b_se(self) -> int:
        return self.blk_k if self.settings.trans_b else self.blk_n

    @property
    def b_i(self) -> int:
        return -(-self.b_ce // (self.dim_m_b * self.dim_vec))

    @property
    def b_j(self) -> int:
        return -(-self.b_se // self.dim_n_b)

    @property
    def lda_s(self) -> int:
        """Elements between rows (k) of the A stripe in shared memory."""
        return self.blk_m + self.pad_a

    @property
    def ldb_s(self) -> int:
        return self.blk_n + self.pad_b

    @property
    def smem_a(self) -> int:
        """Elements of the A stripe; B's starts right after it (rounded up to a multiple of dim_vec
        when a switch beyond the paper is set, so that B's vectors stay aligned)."""
        if not self.extended:
            return self.blk_m * self.blk_k
        return _round_up(self.lda_s * self.blk_k, self.dim_vec)

    @property
    def smem_buffer(self) -> int:
        """Elements of one buffer: the A stripe, then the B stripe."""
        if not self.extended:
            return self.blk_k * (self.blk_m + self.blk_n)
        return _round_up(self.smem_a + self.ldb_s * self.blk_k, self.dim_vec)

    @property
    def smem_elems(self) -> int:
        return self.smem_buffers * self.smem_buffer

    @property
    def smem_bytes(self) -> int:
        return self.smem_elems * self.settings.itemsize

    @property
    def carveout(self) -> int:
        """``preferred_shared_memory_carveout`` in percent for ``shmem_l1`` (0: prefer L1, 1: prefer shared)."""
        return 100 if self.shmem_l1 else 0

    @property
    def bank_size_bytes(self) -> int:
        """Bank size asked for by ``shmem_banks`` (recorded only; modern GPUs have 4-byte banks)."""
        return 8 if self.shmem_banks else 4

    @property
    def block(self) -> tuple[int, int, int]:
        return (self.dim_m, self.dim_n, 1)

    @property
    def vector_width(self) -> int:
        """Elements per vector load (``dim_vec``): lda and ldb must be multiples of it (launch rule)."""
        return self.dim_vec

    vector_name = "dim_vec"

    def grid(self, m: int, n: int) -> tuple[int, int, int]:
        """Thread-block grid for an M x N matrix C."""
        return (max(1, -(-m // self.blk_m)), max(1, -(-n // self.blk_n)), 1)

    def config(self) -> dict:
        """The 15 parameters as a dict, and the switches beyond the paper when one is set."""
        names = self.required_names() + (tuple(OPTIONAL) if self.extended else ())
        return {name: getattr(self, name) for name in names}


#: switches beyond the paper and the paper's value of each
OPTIONAL = {"pad_a": 0, "pad_b": 0, "smem_buffers": 1, "async_copy": 0}


def _round_up(x: int, to: int) -> int:
    return -(-x // to) * to


def _pow2_width(dim_vec: int, thr: int) -> int:
    w = 1
    while dim_vec % (2 * w) == 0 and thr % (2 * w) == 0:
        w *= 2
    return w


def vec_type(settings: GemmSettings, width: int) -> tuple[str, list[str]] | None:
    """CUDA type holding ``width`` elements and the expressions (over ``v``) of each element."""
    if width == 1:
        return settings.elem_type, ["v"]
    comps = ["x", "y", "z", "w"]
    if not settings.is_complex:
        vt = f"{settings.real_type}{width}"
        if vt not in ("float2", "float4", "double2"):
            return None
        return vt, [f"v.{c}" for c in comps[:width]]
    if settings.precision == "single" and width == 2:
        return "float4", ["beast_c2f(v.x, v.y)", "beast_c2f(v.z, v.w)"]
    return None
