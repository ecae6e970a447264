"""Jurybox's domain: critics, vendors, calls, parsing, voting, agreement, jobs.

Never imports streamlit: usable from a notebook or the CLI.
"""

from judging.critics import Critic
from judging.errors import (
    CallFailure,
    ConfigError,
    DataError,
    JuryboxError,
    PlaceholderError,
)
from judging.panel import CascadeConfig, Panel
from judging.scales import Scale
from judging.verdicts import FailureKind, Item, PanelVerdict, Verdict, VoteOutcome
from judging.voting import VotingConfig

__all__ = [
    "CallFailure",
    "CascadeConfig",
    "ConfigError",
    "Critic",
    "DataError",
    "FailureKind",
    "Item",
    "JuryboxError",
    "Panel",
    "PanelVerdict",
    "PlaceholderError",
    "Scale",
    "Verdict",
    "VoteOutcome",
    "VotingConfig",
]
