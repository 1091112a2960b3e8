"""Code generation: one small printer per target (Python, C, Lua) over the IR of :mod:`beast.ir`."""
