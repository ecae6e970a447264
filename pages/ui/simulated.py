"""Saying plainly what judged a run (the simulator, rule or python checks, a vendor), and when
simulated critics judged data they cannot read.

Both come from the run's panel snapshot, critic by critic (`judging.panel.vendors.PanelSources`):
a rule or python critic is a check even though its `vendor` field keeps the default.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import sqlite_utils

from judging.demo import demo_gold
from judging.errors import JuryboxError
from judging.panel.panel_files import load_panel
from judging.panel.vendors import PRESETS, PanelSources
from pages.ui.demo import demo_file_hashes
from pages.ui.text_format import plain
from storage.datasets.dataset_store import get_dataset, load_items
from storage.datasets.imported import imported_judges
from storage.results.runs import get_run

# Items of a dataset looked at to tell whether the simulator knows them (a few dozen rows; a
# user's data matching the demo's texts on every one of them does not happen by chance).
KNOWN_SAMPLE = 50


@functools.cache
def _known_texts() -> frozenset[str]:
    """The item texts the simulator knows the truth for (`judging.demo.demo_gold`'s keys)."""
    return frozenset(demo_gold())


def simulator_knows(database: sqlite_utils.Database, dataset_id: int) -> bool:
    """Whether the simulated vendor reads this dataset's items: a demo file as imported, or
    items taken from one (`jurybox demo --limit N` imports the demo's first N items under a
    hash of their own, so the file hash alone said "not the demo" of the demo's own items).

    Every sampled item must show a text the simulator knows (in any field: the demo keys it by
    one field, the pairwise demo by each answer).
    """
    if get_dataset(database, dataset_id).get("file_hash") in demo_file_hashes():
        return True
    sample = load_items(database, dataset_id, limit=KNOWN_SAMPLE)
    known = _known_texts()
    return bool(sample) and all(
        any(isinstance(value, str) and value in known for value in item.fields.values())
        for item in sample
    )


def panel_sources(panel_yaml: str) -> PanelSources | None:
    """What answers each critic of a panel snapshot; None when the snapshot no longer loads (an
    old one the model cannot read: say nothing rather than fail)."""
    try:
        return PanelSources.of(load_panel(panel_yaml).critics)
    except JuryboxError:
        return None


def simulated_critics(panel_yaml: str) -> list[str]:
    """Names of the panel's critics that call the simulated vendor (not its rule or python
    checks, which call nothing)."""
    sources = panel_sources(panel_yaml)
    return list(sources.simulated) if sources else []


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(plain(name) for name in names)


def what_ran(database: sqlite_utils.Database, run: Mapping[str, Any]) -> str | None:
    """One Markdown line saying what judged the run, each source with its critics: the
    **simulated** vendor, **rule/python checks** (they call no model), a vendor by name. None
    when the run's panel snapshot no longer loads."""
    panel_yaml = run.get("panel_yaml") or get_run(database, int(run["id"]))["panel_yaml"]
    sources = panel_sources(panel_yaml)
    if sources is None:
        return None
    parts = []
    if sources.simulated:
        parts.append(f"the **simulated** vendor ({_names(sources.simulated)})")
    if sources.checks:
        parts.append(f"**rule/python checks**, which call no model ({_names(sources.checks)})")
    if sources.imported:
        origins = sorted({j.source for j in imported_judges(database, int(run["dataset_id"]))})
        where = f" from {_names(tuple(origins))}" if origins else ""
        parts.append(f"verdicts **imported**{where}, given outside Jurybox "
                     f"({_names(sources.imported)})")
    for vendor, names in sources.vendors.items():
        title = PRESETS[vendor].title if vendor in PRESETS else vendor
        parts.append(f"**{plain(title)}** ({_names(names)})")
    line = "Judged by " + "; ".join(parts) + "."
    if not sources.calls_vendor and sources.imported and not (sources.simulated or sources.checks):
        line += " Jurybox sent nothing: what the judges cost was paid where they ran."
    elif not sources.calls_vendor:
        prices = " (any cost shown uses the panel's example prices)" if sources.simulated else ""
        line += f" No call left this machine and no money was spent{prices}."
    return line


def simulated_notice(database: sqlite_utils.Database, run: Mapping[str, Any]) -> str | None:
    """The sentence to show next to any figure against the user's gold labels (and the
    critics' labels themselves) when simulated critics judged data that is not the demo's.

    The simulator knows only the demo datasets' answers; on other data it does not read the
    items, so its critics' agreement with the user's gold labels is chance, whatever their
    agreement with each other.

    Args:
        database: this thread's connection.
        run: a run as `storage.results.runs.list_runs` / `get_run` gives it.

    Returns:
        A plain-text sentence, or None (no simulated critic, or data the simulator knows:
        `simulator_knows`).
    """
    panel_yaml = run.get("panel_yaml") or get_run(database, int(run["id"]))["panel_yaml"]
    names = simulated_critics(panel_yaml)
    if not names:
        return None
    if simulator_knows(database, int(run["dataset_id"])):
        return None
    if len(names) == len(run.get("critics") or names):
        who = "Every critic of this run is simulated"
    elif len(names) == 1:
        who = f"Critic {names[0]} is simulated"
    else:
        who = "Critics " + ", ".join(names) + " are simulated"
    return (
        f"{who}, and simulated critics do not read the items: outside the demo dataset their "
        "labels come from a hash of each item's text, not from its meaning. Their agreement "
        "with your gold labels (and with you) is chance, whatever their agreement with each "
        "other. Use a real vendor to judge this data."
    )
