"""Kernel Tuner interop: a beast space as Kernel Tuner's search space and the reverse
(:mod:`.space`), beast's strategy inside Kernel Tuner (:mod:`.strategy`), and the translation of
Kernel Tuner's ``tune_params`` and restrictions into a space file (:mod:`.source`)."""
from .space import (DEFAULT_BLOCK_SIZE_NAMES, KernelTunerSpace, from_kernel_tuner, to_kernel_tuner,
                    tune_kernel)

__all__ = ["from_kernel_tuner", "KernelTunerSpace", "tune_kernel", "to_kernel_tuner", "DEFAULT_BLOCK_SIZE_NAMES"]
