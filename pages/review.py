"""Review: filter to contested items, read every critic side by side, override with a note.

One call per section, top to bottom. The list, the open item and its decision are one fragment
(`pages.ui.review.review_loop.review_loop`): a save, Next, Previous, Skip, a row picked or a page turned
reruns that fragment only, never the run picker, the filters or the reviewer's row above it (at
100,000 items a save that reran the whole page took 0.9 s to open the next item).
"""

import streamlit as st

from pages.ui.agreement import audit_view
from pages.ui.review.review_context import filter_section, open_review, reviewer_row
from pages.ui.review.review_link import follow_item_link, show_linked_item
from pages.ui.review.review_loop import review_loop
from pages.ui.shell import ensure_app_shell

ensure_app_shell()
st.title("Review")
review = open_review()  # the run picked (the page stops without one) and its notices
linked = follow_item_link(review)  # an item a link names opens, whatever filter hid it
reviewer, blind, only_mine = reviewer_row(review)
filters = filter_section(review, reviewer, blind=blind, only_mine=only_mine)
show_linked_item(review, filters, linked)
# -- The audit sample (issue 25): "Draw an audit sample of N items", and the "Label next"
# queue recomputed before the table is read. Everything of it lives in pages/ui/agreement/audit_view.py.
audit_view.review_hook(review.run, filters, blind)
# -- end of the audit block
review_loop(review, filters, reviewer, blind)
