"""Running a panel: preparing and sending calls (`calls/`), vendor batch APIs (`batches/`),
chains, parsing replies, the ledger of tokens and dollars, estimates and budgets, the loopback
transport, and `panel_runner.run_panel` which drives them over items.

May import the leaves, `judging.panel`, `judging.voting` and `judging.simulator` (the built-in
vendor's address); never `judging.analysis`, `judging.runs`, storage or pages.
"""
