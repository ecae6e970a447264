"""Review: the review table and its filters, overrides and final decisions, leases and
assignments, criterion marks, the audit sample, and the verifiable record.
"""
