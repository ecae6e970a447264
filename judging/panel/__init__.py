"""What a panel is: its model (`panel_model.Panel`), critics, vendors' presets and request
rules, the modes a panel can run in (rubric, pairwise, curation, cascade, compound), its
checks and its files.

Data only: nothing here sends a request or runs a vote over a dataset. May import the leaves
(`judging.errors`, `judging.verdicts`, `judging.scales`) and `judging.voting`; never
`judging.engine`, `judging.analysis`, `judging.simulator` or `judging.runs`.
"""
