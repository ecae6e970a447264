"""The Review page: its run context, filters, list, open item, evidence, decision form, moves,
keys and links.
"""
