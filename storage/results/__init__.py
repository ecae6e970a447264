"""A run's results: the run row, its calls and replies, decisions, figures, vendor batches,
comparisons, and the files an export writes.
"""
