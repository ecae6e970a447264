"""The Panel page: its draft, the editors generated from the model, the tier editor, the sample
judging and the critic check.
"""
