"""Cisneros, Sivic & Mikolov (2022), "Benchmarking Learning Efficiency in Deep Reservoir Computing" (WADE)."""

PAPER = "cisneros2022-wade"
