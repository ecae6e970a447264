"""Agreement: alpha with its interval, per-item alpha, per-critic agreement, kappa, confusion.

One call per section, top to bottom; the sections live in `pages/ui/` (`agreement_sections`,
`agreement_tables` and one view module per feature). The figures are loaded here, through
`pages.ui.agreement.agreement_data`, and handed to the sections that draw them.
"""

import streamlit as st

from judging.panel.panel_files import load_panel
from pages.ui.agreement.agreement_data import (
    run_pairwise_report,
    run_report,
    run_rubric_report,
    run_stability_figures,
)
from pages.ui.agreement.agreement_sections import (
    alpha_histograms,
    between_critics_section,
    headline_figures,
    panel_choice_section,
    per_critic_section,
    pick_run_with_verdicts,
    simulated_lines,
    tie_line,
)
from pages.ui.agreement.agreement_tables import (
    against_humans_section,
    pairwise_section,
    rubric_section,
    stability_section,
    verbosity_section,
)
from pages.ui.agreement.audit_view import audit_section
from pages.ui.agreement.calibration_view import calibration_section
from pages.ui.agreement.expected_view import expected_section
from pages.ui.agreement.jury_agreement_view import jury_section
from pages.ui.agreement.reliability_view import reliability_section
from pages.ui.shell import ensure_app_shell
from pages.ui.state import db
from storage.results.runs import get_run

ensure_app_shell()
st.title("Agreement")
run = pick_run_with_verdicts()  # stops the page without a run or without verdicts
notice = simulated_lines(run)
report = run_report(run)
headline_figures(report)
panel = load_panel(get_run(db(), int(run["id"]))["panel_yaml"])  # read once for the page
tie_line(run, panel)
alpha_histograms(report)
# The panel's accuracy on every item, from the audit sample (issue 25: pages/ui/agreement/audit_view.py).
audit_section(run)
per_critic_section(run, report, notice, swap=panel.pairwise.active and panel.pairwise.swap)
between_critics_section(run, report)
panel_choice_section(run)
# A panel of juries: agreement within each jury and between the juries' decisions.
if panel.juries:
    jury_section(run)
rubric_section(run, run_rubric_report(run))
pairwise_section(run_pairwise_report(run))
stability_section(run, report, run_stability_figures(run))
expected_section(run)
against_humans_section(report)
verbosity_section(run)
# Each critic against the blind labels, trusted or not (issue 25: pages/ui/agreement/reliability_view.py).
reliability_section(run)
# Calibration learns from reviews and compares labels: shown once humans have labelled items.
if report.vs_humans and not panel.scale.is_numeric:
    calibration_section(run)
