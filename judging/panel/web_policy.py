"""What the web app refuses that the library and the CLI accept: python critics.

A `kind: python` critic names a function (`function: mypkg.checks:no_pii`), and running it
imports that module: code execution. A panel file you run with the CLI or load in a notebook
is yours; a panel uploaded through the web page, or edited there, may be anyone's. So the app
lists such critics (a saved panel shows them) but never imports the code they name:

- the Panel page refuses to import, save or test a panel with a python critic
  (`refuse_python_critics`, with the sentence below);
- the Run page refuses to start one;
- and every runner the app builds says `python_critics=False` (`CallRunner`, `JobRegistry`),
  so even a panel that reached a run some other way gets a failed verdict with the sentence,
  never an import.

Datasets never name code: a dataset's fields are data for every kind of critic.
"""

from __future__ import annotations

from typing import Protocol

from judging.errors import ConfigError
from judging.panel.critics import Critic


class Panel(Protocol):
    """What this policy reads of a panel (`panel_model.Panel` is one)."""

    @property
    def critics(self) -> list[Critic]: ...

WEB_PYTHON_REFUSAL = (
    "the web app never imports the code a python critic names; run this panel with the CLI "
    "(jurybox judge) or the library, where the panel file is yours, or use a rule critic here."
)


def python_critic_names(panel: Panel) -> list[str]:
    """The names of the panel's python critics, in panel order."""
    return [critic.name for critic in panel.critics if critic.kind == "python"]


def refuse_python_critics(panel: Panel) -> None:
    """Refuse a panel the web app would have to import code for.

    Raises:
        ConfigError: the panel has a python critic; the sentence names it and the way out.
    """
    names = python_critic_names(panel)
    if names:
        index = next(i for i, c in enumerate(panel.critics) if c.name == names[0])
        listed = ", ".join(repr(n) for n in names)
        what = "is a python critic" if len(names) == 1 else "are python critics"
        raise ConfigError(f"critics[{index}].kind: {listed} {what}: {WEB_PYTHON_REFUSAL}")
