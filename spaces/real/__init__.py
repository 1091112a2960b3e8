"""Real-world search spaces from public tuning work, each a beast space file that also holds the
same space in Kernel Tuner's form (``KERNEL_TUNER = {"tune_params": ..., "restrictions": ...,
"max_threads": ..., "block_size_names": ...}``), cited at its top. ``tests/behaviour/test_real_spaces.py``
checks every file here against a brute force over that form; ``bench/bench_real.py`` times
each against Kernel Tuner."""
