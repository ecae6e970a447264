"""Datasets: files read and checked (`importing`, `readers/`, the limits, the column guess),
datasets and items stored, and the verdicts imported with them.
"""
