"""Orchestration: the one floor that uses both the domain (`judging`) and `storage`.

Grouped by capability: `commands` (the command line), `background` (jobs on stored runs: the
registry, a job, its worker and writer threads), `intake` (what comes in from outside: imported
verdicts, pairs, conversation turns), `stored` (services on a stored run: the run read once,
its reports, the audit, comparisons, calibration); and `messages`, the boundary that turns any
error into the sentence a user reads. `judging/__init__.py` never imports this package, so importing the
domain or storage never pulls it in.
"""
