"""reprobench: reproduce published results on how fast and how robustly learning systems learn."""

__version__ = "0.1.0"
