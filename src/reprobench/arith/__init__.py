"""Madsen & Johansen (2019), "Measuring Arithmetic Extrapolation Performance": NAC/NALU on the simple function task."""

PAPER = "madsen2019-arith"
