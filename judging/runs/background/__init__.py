"""Background jobs on stored runs: the registry, a job's handle and progress, its modes, its
worker and writer threads, and the vendor-batch phase.
"""
