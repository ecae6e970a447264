"""What the demo cascade saves against the same critics flat, on the demo dataset.

`judging/demo/cascade_panel.yaml` asks in three tiers (a free rule that rejects, a cheap critic
that accepts, an expensive panel of three that decides the rest); the flat panel asks the four
model critics about every item and votes as the final tier does. Both run over the 300
demo items (`judging/demo/make_dataset.py`), each against its own simulator with the same seed
(the simulator's answers also depend on how often a request was seen), so the figures are
reproducible.

Figures:
    cascade_calls_saved           item x critic calls the flat panel made and the cascade did not
    cascade_dollars_saved         the flat run's cost minus the cascade run's (both ledgers,
                                  at the critics' prices and the tokens the simulator reported)
    cascade_dollars_saved_estimate  what the cascade's ledger estimated its saved calls would
                                  have cost (`judging.engine.cascade_savings`: prompt length and a
                                  typical reply), to compare with the measured figure above
    cascade_gold_agreement / flat_gold_agreement  share of items whose decision is the gold
                                  label: what the savings cost in quality
"""

from __future__ import annotations

import csv

from benchmarks.figures import bench_line
from judging.demo import demo_dataset_path, demo_gold, demo_profiles
from judging.engine.calls import CallRunner, RetryPolicy
from judging.engine.ledger import Ledger
from judging.engine.panel_runner import run_panel
from judging.panel.cascade import CascadeConfig
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.simulator.sim_server import SimulatorServer
from judging.verdicts import Item, PanelVerdict

CASCADE_PANEL = demo_dataset_path().with_name("cascade_panel.yaml")


def _items() -> list[Item]:
    with open(demo_dataset_path(), newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    items = []
    for row in rows:
        gold = row.pop("gold", None)
        items.append(Item(id=row.pop("id"), fields=row, gold=gold))
    return items


def flat_panel(cascade: Panel) -> Panel:
    """The cascade's model critics in one tier, voting as its final tier does (a flat panel
    has no guard: the free rule critics stay out)."""
    final = cascade.cascade.tiers[-1].voting or cascade.voting
    models = [c for c in cascade.critics if c.kind not in ("rule", "python")]
    return cascade.model_copy(update={"cascade": CascadeConfig(), "voting": final,
                                      "critics": models})


def _run(panel: Panel, items: list[Item]) -> tuple[Ledger, list[PanelVerdict]]:
    server = SimulatorServer(profiles=demo_profiles(), gold=demo_gold(), seed=0).start()
    try:
        critics = [c.model_copy(update={"base_url": server.base_url}) for c in panel.critics]
        pointed = panel.model_copy(update={"critics": critics})
        with CallRunner(retry=RetryPolicy(time_scale=0)) as runner:
            result = run_panel(pointed, items, concurrency=32, runner=runner)
    finally:
        server.stop()
    return result.progress.ledger, result.verdicts


def _gold_agreement(verdicts: list[PanelVerdict], items: list[Item]) -> float:
    gold = {item.id: item.gold for item in items}
    return sum(pv.consensus == gold[pv.item_id] for pv in verdicts) / len(verdicts)


def run() -> None:
    items = _items()
    cascade = load_panel(CASCADE_PANEL)
    cascaded, cascade_verdicts = _run(cascade, items)
    flat, flat_verdicts = _run(flat_panel(cascade), items)
    # Model calls only: the free rule is evaluated on every item and counted apart.
    model_calls = cascaded.calls - cascaded.rule_evaluations
    print(f"# flat: {flat.calls} model calls, ${flat.cost_usd:.4f}; cascade: {model_calls} model "
          f"calls + {cascaded.rule_evaluations} rule evaluations, ${cascaded.cost_usd:.4f}")
    bench_line("cascade_calls_saved", flat.calls - model_calls, "calls")
    bench_line("cascade_dollars_saved", flat.cost_usd - cascaded.cost_usd, "usd")
    bench_line("cascade_dollars_saved_estimate", cascaded.saved_usd, "usd")
    bench_line("cascade_gold_agreement", _gold_agreement(cascade_verdicts, items), "fraction")
    bench_line("flat_gold_agreement", _gold_agreement(flat_verdicts, items), "fraction")


if __name__ == "__main__":
    run()
