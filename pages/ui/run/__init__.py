"""The Run page: the new-run box, its sections, the runs table, progress lines and budgets."""
