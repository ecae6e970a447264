"""Panel checks of plug-in critics (`kind: rule` / `python` / `imported`): what a lone critic's own
validation cannot see (the scale, the other critics, the panel's modes).

Called by `judging.panel.panel_checks.check_panel`; each problem is a `ConfigError` starting with
the field path. A rule's own parameters (a regex that does not compile, an unknown check, a
bound the wrong way round) are refused by `judging.panel.rule_checks.Rule` itself.
"""

from __future__ import annotations

from typing import Protocol

from judging.errors import ConfigError
from judging.panel.critics import Critic
from judging.panel.pairwise import PairwiseConfig
from judging.panel.rubric import RubricConfig
from judging.scales import Scale
from judging.verdicts import PLUGIN_KINDS


class Panel(Protocol):
    """What these checks read of a panel (`panel_model.Panel` is one): a protocol, not an
    import, because the Panel model runs these checks from its own validator."""

    @property
    def critics(self) -> list[Critic]: ...
    @property
    def pairwise(self) -> PairwiseConfig: ...
    @property
    def rubric(self) -> RubricConfig: ...
    @property
    def scale(self) -> Scale: ...


def check_plugin_critics(panel: Panel) -> None:
    """Check every rule and python critic of a panel against the rest of it.

    Raises:
        ConfigError: the first problem, naming the field and the fix.
    """
    plugins = {c.name for c in panel.critics if c.kind in PLUGIN_KINDS}
    for index, critic in enumerate(panel.critics):
        where = f"critics[{index}]"
        if critic.kind not in PLUGIN_KINDS:
            argued = [name for name in critic.debaters if name in plugins]
            if argued:
                raise ConfigError(f"{where}.debaters: {argued[0]!r} is a {critic.kind} critic "
                                  "and cannot argue; name critics that call a model")
            continue
        kind = critic.kind
        if kind == "imported":
            # Replays a judge's own verdicts: its repeats, its orders of a pair; no check to pass.
            if panel.rubric.active:
                raise ConfigError(f"{where}.kind: imported critics give one label or score per "
                                  "item, not a mark per criterion; use a score panel")
            continue
        _check_labels(panel, index)
        if critic.rule is not None and critic.rule.check == "exact":
            if critic.reference_field is None:
                raise ConfigError(f"{where}.reference_field: an exact rule compares "
                                  f"{critic.rule.field} with a reference; name the item field "
                                  "that holds the reference answer")
            if critic.reference_field == critic.rule.field:
                raise ConfigError(f"{where}.reference_field: an exact rule would compare "
                                  f"{critic.rule.field} with itself; name another field")
        if critic.samples > 1:
            raise ConfigError(f"{where}.samples: a {kind} critic gives the same verdict every "
                              "time; set samples to 1")
        if critic.logprobs:
            raise ConfigError(f"{where}.logprobs: a {kind} critic has no tokens to read "
                              "probabilities from; turn logprobs off")
        if critic.mode == "batch":
            raise ConfigError(f"{where}.mode: a {kind} critic runs here, at once and free; "
                              "use mode: live")
        if panel.rubric.active:
            raise ConfigError(f"{where}.kind: {kind} critics give one label or score per item, "
                              "not a mark per criterion; a rubric panel needs critics that "
                              "call a model")
        if panel.pairwise.active and kind == "rule":
            raise ConfigError(f"{where}.kind: a rule passes or fails one text and cannot say "
                              "which of two responses is better; on a pairwise panel use a "
                              "python critic that returns the pairwise label, or a critic that "
                              "calls a model")


def _check_labels(panel: Panel, index: int) -> None:
    critic = panel.critics[index]
    where = f"critics[{index}]"
    scale = panel.scale
    named = {"pass_label": critic.pass_label, "fail_label": critic.fail_label}
    if scale.is_numeric:
        for field, label in named.items():
            if label is not None:
                raise ConfigError(f"{where}.{field}: on a score scale a passed check gives "
                                  f"{scale.max:g} and a failed one {scale.min:g}; remove "
                                  f"{field}")
        return
    # A rule always passes or fails; a python function may return a label of the scale
    # instead, and then needs no pass / fail labels (one that returns a bool without them
    # fails that call with a sentence: `judging.engine.plugin_critics`).
    needs_both = critic.kind == "rule" or (critic.pass_label is None) != (
        critic.fail_label is None)
    if scale.kind != "yesno" and needs_both and (critic.pass_label is None
                                                 or critic.fail_label is None):
        missing = "pass_label" if critic.pass_label is None else "fail_label"
        raise ConfigError(f"{where}.{missing}: a {critic.kind} critic on a {scale.kind} scale "
                          "needs the labels a passed and a failed check give; choose from "
                          f"{', '.join(scale.labels)}")
    for field, label in named.items():
        if label is not None and label not in scale.labels and not (
                scale.kind == "yesno" and label in ("yes", "no")):
            raise ConfigError(f"{where}.{field}: {label!r} is not a label of the scale; "
                              f"labels: {', '.join(scale.labels)}")
    passed = critic.pass_label or "yes"
    failed = critic.fail_label or "no"
    if passed == failed:
        raise ConfigError(f"{where}.fail_label: a failed check must give another label than a "
                          f"passed one (both are {passed!r})")
