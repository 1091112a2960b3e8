"""Code generation: one loop-nest IR (:mod:`beast.codegen.ir`) and a small printer per target."""
