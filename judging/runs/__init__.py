"""Orchestration: the one floor that uses both the domain (`judging`) and `storage`.

Background jobs on stored runs (`jobs`: the registry; `job`: a job's handle and progress;
`worker`, `writer`: its threads), the command line (`cli`, `cli_runs`, `summary`), the stored
run's agreement report (`report`) and the boundary that turns any error into the sentence a
user reads (`messages`). `judging/__init__.py` never imports this package, so importing the
domain or storage never pulls it in.
"""
