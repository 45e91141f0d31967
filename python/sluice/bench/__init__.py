"""The benchmark harness behind ``sluice bench``.

Modules, one job each:

* :mod:`sluice.bench.workloads` — what each workload runs and measures;
* :mod:`sluice.bench.variants` — plain vs. under ``sluice run``;
* :mod:`sluice.bench.runner` — rounds, alternation, cache drops, clean-up;
* :mod:`sluice.bench.stats` — medians, min/max, pairwise ratios;
* :mod:`sluice.bench.sysinfo` — the machine and the target's file system;
* :mod:`sluice.bench.caches` — dropping the page cache;
* :mod:`sluice.bench.session` — one invocation, limits first, the results document;
* :mod:`sluice.bench.table` — the printed tables.
"""
