"""The CUDA kernel families the tuner compiles: the BEAST paper's GEMM (:mod:`.paper`, its
layout :mod:`.layout`), the FP64 tensor-core GEMM (:mod:`.mma`), and which one a space asks for
(:mod:`.families`)."""
