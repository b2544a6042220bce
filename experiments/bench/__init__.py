"""``searchbench bench``: our code and its peers side by side in one run, as ratios (benchmarks are
not tests)."""
