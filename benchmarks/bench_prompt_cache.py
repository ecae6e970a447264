"""What prompt caching saves on the demo panel, from the run ledger.

Two panels over the same 300 demo items against the simulator (which reports cached tokens as
OpenAI does: a repeated prefix of 1,024 tokens or more, in 128-token steps):

- the demo panel as shipped: its system prompt is about 100 tokens, under every vendor's
  caching minimum, so nothing is cached;
- the demo panel taught from 8 reviewed examples (`judging.analysis.few_shot.with_examples`, as the
  Review page's "teach" does): a shared system prompt of well over 1,024 tokens.

For each: input tokens, cached input tokens and the cost in the ledger, and the cost the same
tokens would have had without a cache (every input token at the input price). Prices are the
demo critics' own.
"""

from __future__ import annotations

import csv
import os

from benchmarks.figures import bench_line
from judging.analysis.few_shot import Example, with_examples
from judging.demo import demo_dataset_path, demo_panel_path
from judging.engine.calls import CallRunner, RetryPolicy
from judging.engine.ledger import Ledger
from judging.engine.panel_runner import judge_many
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.panel.vendors import cached_price_factor
from judging.verdicts import Item, Verdict

N_ITEMS = int(os.environ.get("JURYBOX_BENCH_CACHE_ITEMS", "300"))


def _items() -> list[Item]:
    with open(demo_dataset_path(), newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    items = []
    for row in rows[:N_ITEMS]:
        gold = row.pop("gold", None)
        items.append(Item(id=row.pop("id"), fields=row, gold=gold))
    return items


def _taught(panel: Panel, items: list[Item]) -> Panel:
    examples = [Example(item_id=item.id, fields=item.fields, label=item.gold or "KEEP",
                        reason="The reviewer's reason, as a taught critic reads it: the class "
                               "is judged by whether shoppers look for it as a unit, whether "
                               "its products share attributes, and whether a sibling covers "
                               "it already.",
                        critic_said=None) for item in items[-8:]]
    return panel.model_copy(update={"critics": [with_examples(c, examples)
                                                for c in panel.critics]})


def _uncached_cost(panel: Panel, verdicts: list[Verdict]) -> float:
    """The ledger's cost with every cached input token priced as a plain one."""
    by_name = {critic.name: critic for critic in panel.critics}
    total = 0.0
    for verdict in verdicts:
        for call in verdict.calls:
            if call.cached or not call.attempts or call.cost_usd is None:
                continue
            critic = by_name[verdict.critic]
            saved = (call.tokens_cached or 0) * (critic.price_in_per_mtok or 0.0) * (
                1.0 - cached_price_factor(critic)) / 1e6
            total += call.cost_usd + saved
    return total


def _measure(name: str, panel: Panel, items: list[Item]) -> None:
    with CallRunner(retry=RetryPolicy(time_scale=0)) as runner:
        results = judge_many(panel, items, runner=runner, concurrency=16)
    verdicts = [v for result in results for v in result.verdicts]
    ledger = Ledger().add_all(verdicts)
    bench_line(f"prompt_cache_{name}_tokens_in", ledger.tokens_in, "tokens")
    bench_line(f"prompt_cache_{name}_tokens_cached", ledger.tokens_cached, "tokens")
    bench_line(f"prompt_cache_{name}_cost_usd", ledger.cost_usd, "usd")
    bench_line(f"prompt_cache_{name}_cost_without_cache_usd", _uncached_cost(panel, verdicts),
               "usd")


def run() -> None:
    items = _items()
    panel = load_panel(demo_panel_path())
    _measure("demo", panel, items)
    _measure("demo_taught", _taught(panel, items), items)


if __name__ == "__main__":
    run()
