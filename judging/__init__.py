"""Jurybox's domain: critics, vendors, calls, parsing, voting, agreement, jobs.

Never imports streamlit: usable from a notebook or the CLI::

    from judging import Critic, Panel, Scale, judge
    panel = Panel(scale=Scale(kind="yesno"), critics=[Critic(name="a", model="sim-careful",
                  prompt_template="Is this spam? {text}")])
    judge(panel, {"id": "1", "text": "WIN A PRIZE"})

`import judging` loads nothing but this file: each name below is imported on first use
(PEP 562), so a script that needs only the panel model never pays for the HTTP engine, and
nothing here starts or even loads the built-in simulator or pandas.
"""

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_EXPORTS = {
    "VotingConfig": "judging.voting.strategies",
    "register_strategy": "judging.voting.strategies",
    "strategy_names": "judging.voting.strategies",
    "vote": "judging.voting.strategies",
    "vote_dataset": "judging.voting.strategies",
    "CallCache": "judging.engine.calls",
    "CallRunner": "judging.engine.calls",
    "MemoryCache": "judging.engine.calls",
    "RetryPolicy": "judging.engine.calls",
    "VendorLimiter": "judging.engine.calls",
    "CriticEstimate": "judging.engine.estimate",
    "RunEstimate": "judging.engine.estimate",
    "estimate_run": "judging.engine.estimate",
    "RunProgress": "judging.engine.panel_runner",
    "RunResult": "judging.engine.panel_runner",
    "judge": "judging.engine.panel_runner",
    "judge_many": "judging.engine.panel_runner",
    "run_panel": "judging.engine.panel_runner",
    "CallFailure": "judging.errors",
    "ConfigError": "judging.errors",
    "DataError": "judging.errors",
    "JuryboxError": "judging.errors",
    "PlaceholderError": "judging.errors",
    "Critic": "judging.panel.critics",
    "CascadeTier": "judging.panel.cascade_tiers",
    "dump_panel": "judging.panel.panel_files",
    "import_prompt_yaml": "judging.panel.panel_files",
    "load_panel": "judging.panel.panel_files",
    "panel_hash": "judging.panel.panel_files",
    "save_panel": "judging.panel.panel_files",
    "CascadeConfig": "judging.panel.panel_model",
    "Panel": "judging.panel.panel_model",
    "VendorLimits": "judging.panel.panel_model",
    "PRESETS": "judging.panel.vendors",
    "Rule": "judging.panel.rule_checks",
    "VendorPreset": "judging.panel.vendors",
    "Scale": "judging.scales",
    "FailureKind": "judging.verdicts",
    "Item": "judging.verdicts",
    "TierVerdict": "judging.verdicts",
    "PanelVerdict": "judging.verdicts",
    "Verdict": "judging.verdicts",
    "VoteOutcome": "judging.verdicts",
}

__all__ = [
    "VotingConfig",
    "register_strategy",
    "strategy_names",
    "vote",
    "vote_dataset",
    "CallCache",
    "CallFailure",
    "CallRunner",
    "CascadeConfig",
    "CascadeTier",
    "ConfigError",
    "Critic",
    "CriticEstimate",
    "DataError",
    "FailureKind",
    "Item",
    "JuryboxError",
    "MemoryCache",
    "PRESETS",
    "Panel",
    "PanelVerdict",
    "PlaceholderError",
    "RetryPolicy",
    "Rule",
    "RunEstimate",
    "RunProgress",
    "RunResult",
    "Scale",
    "TierVerdict",
    "VendorLimiter",
    "VendorLimits",
    "VendorPreset",
    "Verdict",
    "VoteOutcome",
    "dump_panel",
    "estimate_run",
    "import_prompt_yaml",
    "judge",
    "judge_many",
    "load_panel",
    "panel_hash",
    "run_panel",
    "save_panel",
]

if TYPE_CHECKING:  # what a type checker and a reader see; the interpreter takes __getattr__
    from judging.engine.calls import CallCache, CallRunner, MemoryCache, RetryPolicy, VendorLimiter
    from judging.engine.estimate import CriticEstimate, RunEstimate, estimate_run
    from judging.engine.panel_runner import RunProgress, RunResult, judge, judge_many, run_panel
    from judging.errors import (
        CallFailure,
        ConfigError,
        DataError,
        JuryboxError,
        PlaceholderError,
    )
    from judging.panel.cascade_tiers import CascadeTier
    from judging.panel.critics import Critic
    from judging.panel.panel_files import (
        dump_panel,
        import_prompt_yaml,
        load_panel,
        panel_hash,
        save_panel,
    )
    from judging.panel.panel_model import CascadeConfig, Panel, VendorLimits
    from judging.panel.rule_checks import Rule
    from judging.panel.vendors import PRESETS, VendorPreset
    from judging.scales import Scale
    from judging.verdicts import (
        FailureKind,
        Item,
        PanelVerdict,
        TierVerdict,
        Verdict,
        VoteOutcome,
    )
    from judging.voting.strategies import (
        VotingConfig,
        register_strategy,
        strategy_names,
        vote,
        vote_dataset,
    )


def __getattr__(name: str) -> Any:
    """Import an exported name on first use and keep it (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'judging' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
