"""Rendering helpers shared by the pages.

The pages stay thin: they read through `storage`, act through `judging` and render. At the top,
what more than one page draws (critic cards, text, the run picker, the import forms) and the
app-wide handles (the database of this script run, the process-wide job registry); one package
per page for the rest (`review`, `agreement`, `panel`, `run`). No SQL, no httpx, no threads.
"""
