"""How a run's progress reads: a one-line summary and one row per critic."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from judging.engine.ledger import Ledger
from judging.run_status import RunStatus
from judging.runs.background.job import JobProgress


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    seconds = max(0, round(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else (f"{minutes}m {secs:02d}s" if minutes else f"{secs}s")


def progress_text(p: JobProgress, run_ledger: Ledger | None = None) -> str:
    """"running · 420 / 1,200 verdicts · 12 failed · 35.2 verdicts/s · 22s left · 400 calls sent
    (410 HTTP attempts) · 20 from cache (not paid) · 9,000 + 800 tokens · $0.0123" (plain text).

    The unit is the verdict, an item x critic, as in the Run page's estimate: a critic asked
    twice per item (a pairwise swap, a chain, samples) makes one verdict of several calls, and
    the calls it sent are the ledger's "calls sent".

    Calls done, failed and not sent, the pace and the time left are the job's live figures;
    what was sent, read from the cache and paid is the run's ledger (`run_ledger`, the stored
    one the job's writer adds to as it goes), so the line says what the run's stored line
    (`run_summary_line`) says once the job ends, a resumed run included. Calls a cancel
    stopped are "not sent", never "failed"; once cancelling there is no time left to show.
    """
    status = "cancelling: the calls in flight finish" if p.status is RunStatus.CANCELLING else p.status
    parts = [status, f"{p.done:,} / {p.total:,} verdicts"]
    if p.failed:
        parts.append(f"{p.failed:,} failed")
    if p.cancelled:
        parts.append(f"{p.cancelled:,} not sent")
    if p.calls_saved:
        parts.append(f"{p.calls_saved:,} saved by the cascade")
    if p.status is RunStatus.RUNNING:
        parts.append(f"{p.calls_per_s:.1f} verdicts/s")
        parts.append(f"{_duration(p.eta_s)} left")
    elif p.finished:
        parts.append(f"took {_duration(p.elapsed_s)}")
    ledger = p.ledger if run_ledger is None else run_ledger
    parts.append(ledger.sent_text())
    parts.append(ledger.cost_text())
    return " · ".join(parts)


def _adjusted_text(notes: Sequence[str]) -> str:
    """A critic's adjusted parameters in one cell ("" when none)."""
    return " ".join(notes)


def critic_rows(p: JobProgress) -> list[dict[str, Any]]:
    """One row per critic: calls done and failed, its pace, its time left, and the parameters
    a vendor refused and the run dropped or renamed for it (the "adjusted" column, shown
    when any critic has some).

    A critic's pace is its finished calls over the job's elapsed time (cache hits included, so
    a resumed run shows its true remaining time rather than the speed of cache reads). A job
    that is no longer running (cancelling, or ended short) has no time left: "stopped".
    """
    per_critic = p.per_critic
    critics = list(per_critic)
    share = (p.total / len(critics)) if critics else 0
    any_adjusted = any(c.adjusted for c in per_critic.values())
    rows = []
    for name in critics:
        c = per_critic[name]
        rate = c.done / p.elapsed_s if p.elapsed_s > 0 else 0.0
        left = max(0.0, share - c.done)
        if left == 0:
            time_left = "done"
        elif p.status is not RunStatus.RUNNING:
            time_left = "stopped"
        else:
            time_left = _duration(left / rate if rate > 0 else None)
        rows.append({
            "critic": name,
            "done": c.done,
            "failed": c.failed,
            "of": int(share),
            "progress": f"{(c.done / share * 100) if share else 100:.0f}%",
            "verdicts/s": round(rate, 1),
            "time left": time_left,
        })
        if any_adjusted:
            rows[-1]["adjusted"] = _adjusted_text(c.adjusted)
    return rows


def stored_critic_rows(run: dict[str, Any], counts: dict[str, dict[str, int]],
                       adjusted: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """One row per critic of a run that no job of this process is working on: what is stored
    (`storage.results.calls.call_counts`), the same figures as the run's line (`run_summary_line`),
    and the parameters a vendor refused for it (`storage.results.calls.adjusted_parameters`; the
    "adjusted" column, shown when any critic has some)."""
    adjusted = adjusted or {}
    rows = []
    for name in run["critics"]:
        c = counts.get(name, {})
        stored = c.get("ok", 0) + c.get("failed", 0)
        share = run["n_items"] or 0
        rows.append({
            "critic": name,
            "stored": stored,
            "failed": c.get("failed", 0),
            "of": share,
            "progress": f"{(stored / share * 100) if share else 100:.0f}%",
        })
        if adjusted:
            rows[-1]["adjusted"] = _adjusted_text(adjusted.get(name, ()))
    return rows


def status_text(run: dict[str, Any]) -> str:
    """A run's status as users read it: a run stopped by its cap says "budget reached"."""
    if run["status"] == RunStatus.CANCELLED and run.get("stop_reason") == "budget":
        return "budget reached"
    if run["status"] == RunStatus.INTERRUPTED and run.get("stop_reason") == "vendor_batch":
        return "submitted to vendor"
    return str(run["status"])


def batch_rows(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run's vendor batches as table rows (`storage.results.vendor_batches.run_batches`)."""
    return [{
        "batch": b["batch_id"], "critic": b["critic"], "API": b["api"], "state": b["state"],
        "requests": b["requests"], "answered": b["succeeded"] + b["errored"],
        "failed": b["errored"], "vendor says": (b["vendor_status"] or "-")
        + (f": {b['error']}" if b["error"] else ""),
        "submitted (UTC)": b["submitted_at"][:19].replace("T", " "),
    } for b in batches]


def run_summary_line(run: dict[str, Any]) -> str:
    """The stored state of a run in one line: status, verdicts stored, what was sent and paid.

    Everything about money comes from the run's ledger: cache hits are never counted as paid.
    """
    done = (run["ok_calls"] or 0) + (run["failed_calls"] or 0)
    ledger = Ledger.from_mapping(run["ledger"])
    parts = [
        f"Run #{run['id']} · {status_text(run)}",
        f"{run['n_items']:,} items × {len(run['critics'])} critics",
        f"{done:,} / {run['total_calls']:,} verdicts stored",
    ]
    if run["failed_calls"]:
        parts.append(f"{run['failed_calls']:,} failed")
    parts.append(ledger.sent_text())
    parts.append(ledger.cost_text())
    return " · ".join(parts)
