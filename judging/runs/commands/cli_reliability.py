"""`jurybox reliability RUN`: each critic's reliability card against the run's blind human
labels (the Agreement page's card as text). The card itself is
`judging.runs.stored.reliability.run_reliability`."""

from __future__ import annotations

import argparse

from judging.analysis.reliability_stats import RESAMPLES, TRUSTED_AT
from judging.runs.commands.cli_runs import add_db_option, open_cli_db, positive_int
from judging.runs.stored.reliability import run_reliability

__all__ = ["add_reliability", "cmd_reliability", "share"]


def share(text: str) -> float:
    """argparse type: a share strictly between 0 and 1, with a sentence when it is not."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give a share such as "
                                         "0.8") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{value:g} is not between 0 and 1; give a share "
                                         "such as 0.8 (80%)")
    return value


def add_reliability(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "reliability", help="print each critic's reliability against blind human labels",
        description="Per critic and per label: the true-positive and true-negative rates with "
        "Wilson intervals against the labels given blind (a blind first pass or the audit "
        "sample; overrides given after reading the critics are left out), Cohen's kappa with "
        "the humans with a bootstrap interval, the critic's position bias (pairwise panels) "
        "and verbosity bias (on the field its prompt shows), and the labels it is trusted on: "
        "both intervals' low ends at --trusted-at or more.",
    )
    p.add_argument("run", type=int, help="the run id (see `jurybox runs`)")
    p.add_argument("--trusted-at", type=share, default=TRUSTED_AT, metavar="SHARE",
                   help="trusted on a label when both intervals' low ends reach this share "
                   f"(default {TRUSTED_AT})")
    p.add_argument("--resamples", type=positive_int, default=RESAMPLES,
                   help=f"bootstrap resamples for kappa's interval (default {RESAMPLES})")
    p.add_argument("--seed", type=int, default=0,
                   help="bootstrap seed: the same seed gives the same interval (default 0)")
    add_db_option(p)
    p.set_defaults(func=cmd_reliability)


def cmd_reliability(args: argparse.Namespace) -> int:
    db = open_cli_db(args, read_only=True)
    try:
        card = run_reliability(db, args.run, resamples=args.resamples, seed=args.seed)
    finally:
        db.close()
    print(card.to_text(args.trusted_at))
    return 0
