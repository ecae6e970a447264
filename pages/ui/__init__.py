"""Rendering helpers shared by the pages.

The pages stay thin: they read through `storage`, act through `judging` and render. This package
holds what more than one page draws (critic cards, charts, progress) and the app-wide handles
(the database of this script run, the process-wide job registry). No SQL, no httpx, no threads.
"""
