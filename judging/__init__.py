"""Jurybox's domain: critics, vendors, calls, parsing, voting, agreement, jobs.

Never imports streamlit: usable from a notebook or the CLI::

    from judging import Critic, Panel, Scale
    panel = Panel(scale=Scale(kind="yesno"), critics=[Critic(name="a", model="sim-careful",
                  prompt_template="Is this spam? {text}")])
    panel.judge({"id": "1", "text": "WIN A PRIZE"})
"""

from judging.calls import CallCache, CallRunner, MemoryCache, RetryPolicy, VendorLimiter
from judging.critics import Critic
from judging.errors import (
    CallFailure,
    ConfigError,
    DataError,
    JuryboxError,
    PlaceholderError,
)
from judging.estimate import CriticEstimate, RunEstimate, estimate_run
from judging.panel import CascadeConfig, Panel, VendorLimits
from judging.panel_files import (
    dump_panel,
    import_prompt_yaml,
    load_panel,
    panel_hash,
    save_panel,
)
from judging.rule_checks import Rule
from judging.runner import RunProgress, RunResult, run_panel
from judging.scales import Scale
from judging.vendors import PRESETS, VendorPreset
from judging.verdicts import FailureKind, Item, PanelVerdict, Verdict, VoteOutcome
from judging.voting import (
    VotingConfig,
    register_strategy,
    strategy_names,
    vote,
    vote_dataset,
)

__all__ = [
    "PRESETS",
    "CallCache",
    "CallFailure",
    "CallRunner",
    "CascadeConfig",
    "ConfigError",
    "CriticEstimate",
    "Critic",
    "DataError",
    "FailureKind",
    "Item",
    "JuryboxError",
    "MemoryCache",
    "Panel",
    "PanelVerdict",
    "PlaceholderError",
    "RetryPolicy",
    "Rule",
    "RunEstimate",
    "RunProgress",
    "RunResult",
    "Scale",
    "VendorLimiter",
    "VendorLimits",
    "VendorPreset",
    "Verdict",
    "VoteOutcome",
    "VotingConfig",
    "dump_panel",
    "estimate_run",
    "import_prompt_yaml",
    "load_panel",
    "panel_hash",
    "register_strategy",
    "run_panel",
    "save_panel",
    "strategy_names",
    "vote",
    "vote_dataset",
]
