"""Search spaces: the BEAST paper's GEMM space and small spaces that show each language feature."""
