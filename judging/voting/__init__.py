"""Turning critics' verdicts into a decision: the voting config, the one registry of
strategies (per item and dataset-level, Dawid-Skene among them) and expected scores from
label probabilities.

May import the leaves and `judging.agreement`; nothing above it.
"""
