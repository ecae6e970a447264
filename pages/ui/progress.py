"""How a run's progress reads: a one-line summary and one row per critic."""

from __future__ import annotations

from typing import Any

from judging.ledger import Ledger
from judging.runs.job import JobProgress


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    seconds = max(0, round(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else (f"{minutes}m {secs:02d}s" if minutes else f"{secs}s")


def progress_text(p: JobProgress) -> str:
    """"running · 420 / 1,200 calls · 400 stored · 12 failed · 35.2 calls/s · 22s left · $0.0123"
    (plain text): every figure from the job's one live progress."""
    parts = [p.status, f"{p.done:,} / {p.total:,} calls", f"{p.written:,} stored"]
    if p.failed:
        parts.append(f"{p.failed:,} failed")
    if p.cached:
        parts.append(f"{p.cached:,} from cache")
    if p.calls_saved:
        parts.append(f"{p.calls_saved:,} saved by the cascade")
    if not p.finished:
        parts.append(f"{p.calls_per_s:.1f} calls/s")
        parts.append(f"{_duration(p.eta_s)} left")
    else:
        parts.append(f"took {_duration(p.elapsed_s)}")
    if p.ledger.sent_calls:
        parts.append(p.ledger.cost_text())
    return " · ".join(parts)


def critic_rows(p: JobProgress) -> list[dict[str, Any]]:
    """One row per critic: calls done and failed, its pace, and its time left.

    A critic's pace is its finished calls over the job's elapsed time (cache hits included, so
    a resumed run shows its true remaining time rather than the speed of cache reads).
    """
    critics = list(p.per_critic)
    share = (p.total / len(critics)) if critics else 0
    rows = []
    for name in critics:
        c = p.per_critic[name]
        rate = c.done / p.elapsed_s if p.elapsed_s > 0 else 0.0
        left = max(0.0, share - c.done)
        rows.append({
            "critic": name,
            "done": c.done,
            "failed": c.failed,
            "of": int(share),
            "progress": f"{(c.done / share * 100) if share else 100:.0f}%",
            "calls/s": round(rate, 1),
            "time left": "done" if left == 0 else _duration(left / rate if rate > 0 else None),
        })
    return rows


def status_text(run: dict[str, Any]) -> str:
    """A run's status as users read it: a run stopped by its cap says "budget reached"."""
    if run["status"] == "cancelled" and run.get("stop_reason") == "budget":
        return "budget reached"
    if run["status"] == "interrupted" and run.get("stop_reason") == "vendor_batch":
        return "submitted to vendor"
    return str(run["status"])


def batch_rows(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run's vendor batches as table rows (`storage.vendor_batches.run_batches`)."""
    return [{
        "batch": b["batch_id"], "critic": b["critic"], "API": b["api"], "state": b["state"],
        "requests": b["requests"], "answered": b["succeeded"] + b["errored"],
        "failed": b["errored"], "vendor says": (b["vendor_status"] or "-")
        + (f": {b['error']}" if b["error"] else ""),
        "submitted (UTC)": b["submitted_at"][:19].replace("T", " "),
    } for b in batches]


def run_summary_line(run: dict[str, Any]) -> str:
    """The stored state of a run in one line: status, calls stored, what was sent and paid.

    Everything about money comes from the run's ledger: cache hits are never counted as paid.
    """
    done = (run["ok_calls"] or 0) + (run["failed_calls"] or 0)
    ledger = Ledger.from_mapping(run["ledger"])
    parts = [
        f"Run #{run['id']} · {status_text(run)}",
        f"{run['n_items']:,} items × {len(run['critics'])} critics",
        f"{done:,} / {run['total_calls']:,} calls stored",
    ]
    if run["failed_calls"]:
        parts.append(f"{run['failed_calls']:,} failed")
    parts.append(ledger.sent_text())
    parts.append(ledger.cost_text())
    return " · ".join(parts)
