"""What the CLI prints about a run: the progress bar and the end-of-run summary.

The money and call figures come from the run ledger (`judging.engine.ledger.Ledger`); this module
only counts the vote (consensus, disagreements, agreement with gold) and formats.
"""

from __future__ import annotations

import json
import pathlib
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from judging.engine.ledger import Ledger
from judging.engine.panel_runner import RunProgress
from judging.errors import JuryboxError
from judging.panel.panel_model import Panel
from judging.runs.background.job import JobProgress
from judging.verdicts import Item, PanelVerdict
from judging.voting.strategies import ESCALATE, band


class ProgressBar:
    """A plain-text progress bar on a stream (stderr): redrawn in place on a terminal, a line
    every 10% otherwise (so logs and CI output stay short). Thread-safe: the engine reports
    progress from worker threads."""

    WIDTH = 30

    def __init__(self, total_items: int, *, stream: IO[str], enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled and total_items > 0
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._last_decile = -1
        self._drawn = False

    def update(self, progress: RunProgress | JobProgress) -> None:
        """Draw one snapshot: the engine's (`on_progress`) or a background job's."""
        if not self.enabled:
            return
        with self._lock:
            line = self.render(progress)
            if self.tty:
                self.stream.write("\r" + line)
                self._drawn = True
            else:
                decile = int(progress.fraction * 10)
                if decile <= self._last_decile:
                    return
                self._last_decile = decile
                self.stream.write(line + "\n")
            self.stream.flush()

    @classmethod
    def render(cls, p: RunProgress | JobProgress) -> str:
        """One line: bar, items, verdicts (item x critic, the unit the Run page counts too),
        failures, verdicts not sent (cancelled), elapsed time."""
        filled = int(p.fraction * cls.WIDTH)
        bar = "#" * filled + "." * (cls.WIDTH - filled)
        failed = f", {p.failed} failed" if p.failed else ""
        # Calls a cancel stopped are "not sent" (the ledger's rule), never "failed".
        not_sent = f", {p.cancelled} not sent" if p.cancelled else ""
        return (
            f"[{bar}] {p.fraction:4.0%}  {p.items_done}/{p.items_total} items, "
            f"{p.done}/{p.total} verdicts{failed}{not_sent}  {p.elapsed_s:5.1f} s"
        )

    def close(self) -> None:
        with self._lock:
            if self.enabled and self.tty and self._drawn:
                self.stream.write("\n")
                self.stream.flush()


@dataclass
class CriticSummary:
    name: str
    calls: int = 0
    ok: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    attempts: int = 0
    cached: int = 0
    correct: int = 0  # valid verdicts equal to the gold label
    with_gold: int = 0  # valid verdicts on items that have a gold label


@dataclass
class RunSummary:
    """What one run did, in figures; `format_summary` renders it."""

    panel: str
    strategy: str
    items: int
    critics: list[CriticSummary]
    consensus: Counter[str]
    no_consensus: int
    disagreements: int
    calls: int
    ledger: Ledger  # what the run sent and paid (cache hits never paid)
    unpriced_critics: list[str]  # critics with at least one sent call of unknown cost
    seconds: float
    gold_items: int
    gold_correct: int
    simulated: bool
    # A score or rubric panel's consensus is counted by band, shown in this order (every band,
    # empty ones too); empty for a label panel, whose labels are shown by count.
    bands: list[str] = field(default_factory=list)


def _gold_fits(panel: Panel, labels: Iterable[str]) -> bool:
    """Whether the dataset's gold labels are on the panel's scale (numbers on a score scale,
    the scale's labels otherwise); gold of another task is not compared at all."""
    for label in labels:
        try:
            panel.scale.normalize(label)
        except JuryboxError:
            return False
    return True


def summarize(
    panel: Panel, items: list[Item], verdicts: list[PanelVerdict], seconds: float
) -> RunSummary:
    """Reduce a run's panel verdicts to the figures the summary shows.

    Args:
        panel: the `Panel` that ran.
        items: the items judged (their gold labels, if any, are compared with the consensus).
        verdicts: one `PanelVerdict` per item.
        seconds: wall time of the run.
    """
    gold = {item.id: item.gold for item in items if item.gold is not None}
    ledger = Ledger()
    decisions: list[DecisionGroup] = []
    calls: list[CallGroup] = []
    for pv in verdicts:
        truth = gold.get(pv.item_id)
        decisions.append((pv.consensus, truth, 1, int(bool(pv.disagreement))))
        for v in pv.verdicts:
            before = ledger.unpriced_calls
            ledger.add(v)
            failure = None if v.failure is None else str(getattr(v.failure, "value", v.failure))
            calls.append((v.critic, failure, v.value, truth, 1, 0 if v.cached else v.attempts,
                          int(bool(v.cached)), ledger.unpriced_calls - before,
                          int(bool(v.simulated))))
    return summarize_counts(panel, decisions, calls, list(set(gold.values())), ledger, seconds)


#: (consensus value, the item's gold label, items, disagreements): decisions alike, counted.
DecisionGroup = tuple[Any, str | None, int, int]
#: (critic, failure kind or None, value, the item's gold label, calls, HTTP attempts, cached,
#: unpriced, simulated): calls alike, counted.
CallGroup = tuple[str, str | None, Any, str | None, int, int, int, int, int]


def summarize_counts(
    panel: Panel,
    decisions: Iterable[DecisionGroup],
    calls: Iterable[CallGroup],
    gold_labels: list[str],
    ledger: Ledger,
    seconds: float,
) -> RunSummary:
    """The summary's figures from counts of decisions and calls alike (what SQLite counts for
    a stored run, so a run of a million items is never loaded to print eight lines; `summarize`
    counts verdicts in memory into the same shape).

    Args:
        decisions: see `DecisionGroup` (`storage.results.consensus.decision_counts`, values read as
            `_stored_value` does).
        calls: see `CallGroup`, for the calls of decided items only.
        gold_labels: every distinct gold label of the dataset: when one is not on the panel's
            scale, gold is not compared at all.
        ledger: what the run sent and paid.
    """
    compare = _gold_fits(panel, gold_labels)
    bands = score_bands(panel)
    critics = {c.name: CriticSummary(c.name) for c in panel.critics}
    consensus: Counter[str] = Counter()
    no_consensus = disagreements = gold_correct = gold_items = items = 0
    unpriced: set[str] = set()
    simulated = False
    for value, gold, n, disagreeing in decisions:
        truth = gold if compare else None
        items += n
        if value is None:
            no_consensus += n
        elif bands and isinstance(value, (int, float)):
            consensus[_band_of(panel, float(value), bands)] += n
        else:
            consensus[_fmt_value(value)] += n
        disagreements += disagreeing
        if truth is not None:
            gold_items += n
            gold_correct += n if value is not None and _same(value, truth) else 0
    for critic, failure, value, gold, n, attempts, cached, n_unpriced, sim in calls:
        truth = gold if compare else None
        cs = critics.setdefault(critic, CriticSummary(critic))
        cs.calls += n
        cs.attempts += attempts
        cs.cached += cached
        if n_unpriced:
            unpriced.add(critic)
        simulated = simulated or bool(sim)
        if failure is None:
            cs.ok += n
            if truth is not None:
                cs.with_gold += n
                cs.correct += n if _same(value, truth) else 0
        else:
            cs.failures[failure] += n
    return RunSummary(
        panel=getattr(panel, "name", "panel"),
        strategy=panel.voting.strategy,
        items=items,
        critics=list(critics.values()),
        consensus=consensus,
        no_consensus=no_consensus,
        disagreements=disagreements,
        calls=sum(c.calls for c in critics.values()),
        ledger=ledger,
        unpriced_critics=sorted(unpriced),
        seconds=seconds,
        gold_items=gold_items,
        gold_correct=gold_correct,
        simulated=simulated,
        bands=bands,
    )


def _fmt_value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# Without thresholds, a score scale's range is shown in this many equal bands.
SCORE_BANDS = 5


def score_bands(panel: Panel) -> list[str]:
    """The bands a score or rubric panel's consensus is counted in, lowest first: its
    `voting.thresholds` (with `escalate` below them all), else `SCORE_BANDS` equal parts of the
    scale ("0-0.2", ..., "0.8-1"). Empty for a label scale."""
    scale = panel.scale
    if not scale.is_numeric:
        return []
    thresholds = dict(panel.voting.thresholds)
    if thresholds:
        return [ESCALATE, *sorted(thresholds, key=lambda name: thresholds[name])]
    assert scale.min is not None and scale.max is not None
    edges = [scale.min + (scale.max - scale.min) * k / SCORE_BANDS for k in range(SCORE_BANDS + 1)]
    return [f"{low:.3g}-{high:.3g}" for low, high in zip(edges, edges[1:])]


def _band_of(panel: Panel, score: float, bands: list[str]) -> str:
    """The band of `score` among `score_bands(panel)` (the top one includes the maximum)."""
    thresholds = dict(panel.voting.thresholds)
    if thresholds:
        return band(score, thresholds) or ESCALATE
    scale = panel.scale
    assert scale.min is not None and scale.max is not None
    share = (score - scale.min) / (scale.max - scale.min)
    # share x bands, not share / width: 0.6 / 0.2 is 2.9999..., which would put 0.6 a band low.
    return bands[min(max(int(share * SCORE_BANDS + 1e-9), 0), SCORE_BANDS - 1)]


def _same(value: Any, truth: str) -> bool:
    if isinstance(value, float):
        try:
            return value == float(truth)
        except ValueError:
            return False
    return str(value).casefold() == str(truth).casefold()


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def format_summary(s: RunSummary) -> str:
    """The end-of-run summary as plain text (what `jurybox judge` and `jurybox demo` print)."""
    sim = " (simulated vendor)" if s.simulated else ""
    lines = [
        "",
        f"Panel {s.panel!r} ({s.strategy} voting){sim}: {s.items} items, "
        f"{len(s.critics)} critics, {s.seconds:.1f} s",
    ]
    if s.bands:  # a score's bands in their order, an empty band included (escalate only if used)
        order = [(name, s.consensus.get(name, 0)) for name in s.bands
                 if name != ESCALATE or s.consensus.get(name)]
    else:
        order = sorted(s.consensus.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [f"{label} {n}" for label, n in order]
    if s.no_consensus:
        parts.append(f"no consensus {s.no_consensus}")
    lines.append("Consensus:      " + (", ".join(parts) or "none")
                 + (" (items per score band)" if s.bands else ""))
    lines.append(f"Disagreements:  {s.disagreements} of {s.items} items "
                 f"({_pct(s.disagreements, s.items)})")
    if s.gold_items:
        lines.append(f"Gold agreement: consensus matches gold on {s.gold_correct} of "
                     f"{s.gold_items} items ({_pct(s.gold_correct, s.gold_items)})")
    failed = sum(sum(c.failures.values()) for c in s.critics)
    lines.append(f"Calls:          {s.calls} ({s.calls - failed} verdicts, {failed} failed)")
    lines.append(f"Sent:           {s.ledger.sent_text()}")
    cost = s.ledger.cost_text()
    if s.unpriced_critics:
        cost += f" (critics without a price: {', '.join(s.unpriced_critics)})"
    lines.append(f"Cost:           {cost}")
    rate = s.calls / s.seconds if s.seconds > 0 else 0.0
    lines.append(f"Time:           {s.seconds:.2f} s ({rate:.0f} calls/s)")
    lines.append("")
    width = max([len("critic")] + [len(c.name) for c in s.critics])
    head = f"  {'critic':<{width}}  {'ok':>5}  {'failed':>6}  {'gold acc':>8}  failures"
    lines.append(head)
    for c in s.critics:
        nfail = sum(c.failures.values())
        acc = _pct(c.correct, c.with_gold) if c.with_gold else "-"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(c.failures.items())) or "-"
        lines.append(f"  {c.name:<{width}}  {c.ok:>5}  {nfail:>6}  {acc:>8}  {kinds}")
    return "\n".join(lines)


def write_jsonl(path: pathlib.Path, verdicts: Iterable[PanelVerdict]) -> int:
    """One JSON object per item: the vote and every critic's verdict with its evidence.

    Returns:
        How many items were written (`verdicts` may be a stream: it is read once).
    """
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        for pv in verdicts:
            row: dict[str, Any] = {
                "item_id": pv.item_id,
                "consensus": pv.consensus,
                "agreement": pv.agreement,
                "disagreement": pv.disagreement,
                "failed": pv.failed,
                "counts": pv.outcome.counts,
                "strategy": pv.strategy,
                "tier": pv.tier,
                "settled_by": pv.settled_by,
                "verdicts": [v.to_dict() for v in pv.verdicts],
            }
            if pv.outcome.juries:  # a panel of juries: each jury's own decision
                row["juries"] = {
                    name: {"consensus": o.consensus, "agreement": o.agreement,
                           "disagreement": o.disagreement, "failed": o.failed, "note": o.note}
                    for name, o in pv.outcome.juries.items()}
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            written += 1
    return written
