"""The budget cap inputs of the Run page (a new run, or a resume after "budget reached")."""

from __future__ import annotations

import streamlit as st

from judging.engine.budget import BudgetCap


def budget_inputs(prefix: str, *, usd: float | None = None, tokens: int | None = None) -> BudgetCap | None:
    """Two optional inputs, dollars and tokens; the cap they make, or None when both are empty.

    Raises:
        ConfigError / pydantic.ValidationError: a cap that is no limit (shown by `user_errors`).
    """
    left, right = st.columns(2)
    cap_usd = left.number_input(
        "Budget cap in dollars (optional)", min_value=0.0, value=usd, step=1.0, format="%.4f",
        key=f"{prefix}.budget_usd",
        help="The run never spends more: a call that could pass the cap is not sent, and the "
             "run stops with 'budget reached' (resume it with a higher cap).")
    cap_tokens = right.number_input(
        "Budget cap in tokens (optional)", min_value=0, value=tokens, step=10_000,
        key=f"{prefix}.budget_tokens",
        help="Input and output tokens together. Calls of critics without prices count here.")
    if cap_usd is None and cap_tokens is None:
        return None
    return BudgetCap(usd=cap_usd, tokens=None if cap_tokens is None else int(cap_tokens))
