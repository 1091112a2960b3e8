"""The GEMM kernel families ``beast tune`` can generate, and which one a space asks for.

* ``gemm``: the paper's template (:mod:`beast.tune.kernels.paper`, ``spaces/gemm.py``): CUDA cores,
  register tiles, shared-memory stripes; every precision.
* ``gemm_mma``: FP64 tensor cores (:mod:`beast.tune.kernels.mma`, ``spaces/gemm_mma.py``):
  warp-level ``mma.sync`` with a ``cp.async`` pipeline; double and double complex, compute
  capability 8.0 and later.

A space names its family with a module-level constant ``KERNEL_FAMILY = "gemm_mma"``; without
one, a space whose iterators carry every parameter of the tensor-core template is of that
family, and any other space is of the paper's (whose error then names the parameters it lacks).
Every family's kernels share the launch signature and the object shape of
:class:`beast.tune.kernels.paper.GemmKernel`, so the GPU layer and the host simulator run them alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from ...errors import BeastError

from . import paper as kernel, mma as kernel_mma
from .paper import GemmSettings


@dataclass(frozen=True)
class KernelFamily:
    """One kernel template: its log name and version, its layout class and generator."""

    name: str
    version: int
    layout: type
    generate: Callable
    what: str                       # a few words for reports
    min_cc: tuple[int, int] | None = None
    tensor_cores: bool = False

    def settings(self, settings: Mapping) -> GemmSettings:
        """The space's settings as :class:`GemmSettings`, checked against what the family computes."""
        st = GemmSettings.from_mapping(settings)
        if self.tensor_cores and st.precision != "double":
            raise BeastError(f"the {self.name} kernels compute in double precision only, not {st.precision}",
                             hint="tune single precision with spaces/gemm.py")
        return st

    def check_names(self, names, settings: GemmSettings) -> None:
        """BeastError naming every parameter of the template that the space's iterators lack."""
        if any(n not in names for n in self.layout.required_names()):
            self.layout.from_config({n: 1 for n in names}, settings)   # raises, listing them all

    def check_device(self, cc: tuple[int, int] | None, profile: str | None = None) -> None:
        """BeastError when the device profile is older than the family's hardware."""
        if cc is None or self.min_cc is None or tuple(cc) >= self.min_cc:
            return
        raise BeastError(
            f"the {self.name} kernels need compute capability {self.min_cc[0]}.{self.min_cc[1]} or later "
            f"(FP64 tensor cores); the device profile {profile or ''} has {cc[0]}.{cc[1]}".replace("  ", " "),
            hint="prune for the GPU that measures (--device auto, or a100, h100, h200), "
                 "or tune spaces/gemm.py on older GPUs")

    def peak_gflops(self, profile, precision: str) -> float | None:
        """The device's peak for these kernels: CUDA cores (``gemm``), or FP64 tensor cores,
        twice the CUDA cores' FP64 rate on A100 (8.0) and H100/H200 (9.0), unknown elsewhere."""
        fn = getattr(profile, "peak_gflops", None)
        if fn is None:
            return None
        try:
            peak = fn(precision)
        except Exception:       # an unknown precision or a profile without the facts
            return None
        if not self.tensor_cores or peak is None:
            return peak
        return 2 * peak if tuple(profile.cc) in ((8, 0), (9, 0)) else None

    @property
    def peak_what(self) -> str:
        return "FP64 tensor cores" if self.tensor_cores else "CUDA cores"


FAMILIES = {
    "gemm": KernelFamily("gemm", kernel.KERNEL_VERSION, kernel.GemmLayout, kernel.generate,
                         "the paper's template (CUDA cores)"),
    kernel_mma.FAMILY: KernelFamily(kernel_mma.FAMILY, kernel_mma.KERNEL_VERSION, kernel_mma.MmaLayout,
                                    kernel_mma.generate, "FP64 tensor cores (mma.sync, cp.async)",
                                    min_cc=(8, 0), tensor_cores=True),
}
#: the family of a space that names none (the paper's; every log before families had it)
DEFAULT_FAMILY = "gemm"


def get_family(name: str) -> KernelFamily:
    """The family called ``name``; BeastError listing the known ones otherwise."""
    try:
        return FAMILIES[name]
    except (KeyError, TypeError):
        raise BeastError(f"unknown kernel family {name!r}",
                         hint="KERNEL_FAMILY in a space file is one of " + ", ".join(map(repr, FAMILIES))) from None


def family_of(space) -> KernelFamily:
    """The family a space asks for: its ``KERNEL_FAMILY`` constant, else the tensor-core family
    when its iterators hold every parameter of that template, else the paper's."""
    module = getattr(space, "module", None)
    declared = getattr(module, "namespace", {}).get("KERNEL_FAMILY") if module is not None else None
    if declared is not None:
        return get_family(declared)
    names = set(getattr(space, "iterators", ()))
    mma = FAMILIES[kernel_mma.FAMILY]
    if all(n in names for n in mma.layout.required_names()):
        return mma
    return FAMILIES[DEFAULT_FAMILY]
