"""A kernel without a GPU: NumPy emulation of its tiling (:mod:`.emulate`), the generated CUDA run
on CPU threads (:mod:`.hostsim`) and its hardware counters (:mod:`.counters`)."""
