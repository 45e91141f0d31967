"""sluice: transparent burst buffer, I/O aggregator and two-sided I/O profiler."""

__version__ = "0.1.0"
