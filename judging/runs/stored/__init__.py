"""Services on a stored run: the run read once (`stored_run`), its reports and kept figures, the
audit, comparisons, calibration, the critic check, the curated taxonomy and threads.
"""
