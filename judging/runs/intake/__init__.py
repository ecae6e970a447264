"""What comes into a run from outside: verdicts judged elsewhere, comparisons made from responses
side by side, conversations turned into turns.
"""
