"""The command line: `jurybox` and its subcommands, each a `cli_*` module, and the CLI's progress
bar and summary.
"""
