"""What a finished run's verdicts say: the agreement report, calibration and few-shot choice,
stability, verbosity bias, pairwise and rubric statistics, the team's own agreement, the audit
estimate, version-against-version statistics and the hash chain of the review record.

Pure functions over verdicts, codes and labels: may import the leaves, `judging.agreement`,
`judging.voting` and `judging.panel`'s models; never `judging.engine`, runs, storage or pages.
"""
