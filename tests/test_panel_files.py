"""Panel files: YAML round trips, content hashes, clear errors, key refusal, prompt imports."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from judging.errors import ConfigError
from judging.panel.critics import Critic
from judging.panel.panel_checks import check_panel
from judging.panel.panel_files import (
    convert_jinja_template,
    dump_panel,
    find_secret,
    import_prompt_yaml,
    load_panel,
    panel_from_dict,
    panel_hash,
    save_panel,
)
from judging.panel.panel_model import PANEL_SCHEMA_VERSION, CascadeConfig, Panel
from judging.scales import Scale
from judging.voting.strategies import VotingConfig

PROMPT = 'Judge the candidate class {name}: {description}\nReply like {{"label": "KEEP"}}.'


def base_dict() -> dict[str, Any]:
    """A valid taxonomy panel as it would appear in a file."""
    return {
        "schema_version": 1,
        "name": "taxonomy",
        "scale": {
            "kind": "nominal",
            "labels": ["KEEP", "REJECT", "SPLIT", "MERGE"],
            "synonyms": {"drop": "REJECT"},
        },
        "voting": {
            "strategy": "plurality",
            "priority": ["REJECT", "SPLIT"],
            "fallback": "REJECT",
            "tie_policy": "pessimistic",
        },
        "cascade": {"guard_tiers": [0], "reject_label": "REJECT"},
        "critics": [
            {
                "name": "strict",
                "model": "sim-strict",
                "prompt_template": PROMPT,
                "system_prompt": "You curate taxonomies.\nBe strict.",
                "temperature": 0.2,
            },
            {
                "name": "lenient",
                "model": "sim-lenient",
                "prompt_template": PROMPT,
                "tier": 1,
                "weight": 2.0,
                "api_key_env": "SIM_KEY",
                "extra": {"seed": 7},
            },
            {
                "name": "custom",
                "vendor": "custom",
                "base_url": "http://127.0.0.1:8000/v1",
                "model": "llama",
                "prompt_template": PROMPT,
                "tier": 1,
            },
        ],
    }


@pytest.fixture
def panel() -> Panel:
    return panel_from_dict(base_dict())


def dumped(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False)


# ----------------------------------------------------------------------------- round trips


def test_round_trip_text(panel: Panel) -> None:
    text = dump_panel(panel)
    again = load_panel(text)
    assert again == panel
    assert panel_hash(again) == panel_hash(panel)
    assert text.startswith(f"schema_version: {PANEL_SCHEMA_VERSION}\n")


def test_round_trip_file(panel: Panel, tmp_path: Path) -> None:
    path = tmp_path / "sub" / "panel.yaml"
    save_panel(panel, path)
    assert load_panel(path) == panel
    assert load_panel(str(path)) == panel
    assert not [p for p in path.parent.iterdir() if p.name != "panel.yaml"]  # no temp left


def test_dump_is_readable(panel: Panel) -> None:
    text = dump_panel(panel)
    # Multi-line prompts as blocks; kind and strategy spelled out even though they are defaults.
    assert "prompt_template: |" in text
    assert "kind: nominal" in text
    assert "strategy: plurality" in text
    assert "temperature: 0.0" not in text  # defaults stay out of the file


def test_round_trip_every_scale_kind() -> None:
    for scale in (
        Scale(kind="yesno"),
        Scale(kind="likert", min=1, max=5),
        Scale(kind="ordinal", labels=["low", "mid", "high"]),
    ):
        panel = Panel(scale=scale, critics=[Critic(name="a", model="m", prompt_template="{x}")])
        assert load_panel(dump_panel(panel)) == panel
    score_panel = Panel(
        scale=Scale(kind="score", min=0, max=10),
        critics=[Critic(name="a", model="m", prompt_template="{x}")],
        voting=VotingConfig(strategy="mean", thresholds={"ok": 5, "bad": 0}, max_spread=2),
    )
    assert load_panel(dump_panel(score_panel)) == score_panel


def test_hash_is_stable_and_ignores_key_order_and_spelled_out_defaults(panel: Panel) -> None:
    data = base_dict()
    reordered = dict(reversed(list(data.items())))
    reordered["critics"][0]["max_tokens"] = 512  # the default, spelled out
    assert panel_hash(panel_from_dict(reordered)) == panel_hash(panel)
    assert len(panel_hash(panel)) == 16
    assert panel_hash(panel) == panel_hash(panel_from_dict(base_dict()))


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["critics"][0].update(temperature=0.3),
        lambda d: d["critics"][1].update(prompt_template=PROMPT + " "),
        lambda d: d["voting"].update(tie_policy="optimistic"),
        lambda d: d["scale"]["labels"].append("DEFER"),
        lambda d: d["cascade"].update(min_agreement=0.5),
        lambda d: d.update(name="taxonomy v2"),
        lambda d: d["critics"].reverse(),
    ],
)
def test_hash_changes_on_any_change(panel: Panel, change: Any) -> None:
    data = base_dict()
    change(data)
    assert panel_hash(panel_from_dict(data)) != panel_hash(panel)


def test_missing_schema_version_reads_as_current() -> None:
    data = base_dict()
    del data["schema_version"]
    assert load_panel(dumped(data)).schema_version == PANEL_SCHEMA_VERSION


# ----------------------------------------------------------------------------- bad files


def _with(path: str, value: Any) -> dict[str, Any]:
    """base_dict() with one field set; `path` like "critics.1.temperature"."""
    data = base_dict()
    target: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    last = parts[-1]
    if last.isdigit():
        target[int(last)] = value
    else:
        target[last] = value
    return data


def _without(path: str) -> dict[str, Any]:
    data = base_dict()
    target: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    del target[parts[-1]]
    return data


BAD = [
    (
        _with("critics.1.temperature", 3.5),
        r"^critics\[1\]\.temperature: must be at most 2 \(got 3\.5\)$",
    ),
    (
        _with("critics.0.max_tokens", "lots"),
        r"critics\[0\]\.max_tokens: must be a whole number \(got 'lots'\)",
    ),
    (_with("critics.0.weight", -1), r"critics\[0\]\.weight: must be at least 0 \(got -1\)"),
    (
        _with("voting.tie_policy", "coin"),
        r"voting\.tie_policy: must be one of 'pessimistic', 'optimistic' or 'abstain' "
        r"\(got 'coin'\)",
    ),
    (_without("critics.0.model"), r"critics\[0\]\.model: is required"),
    (_with("critics", []), r"critics: needs at least 1 entry"),
    (_with("critics.0.prompt_template", ""), r"critics\[0\]\.prompt_template: must not be empty"),
    (
        _with("critics.0.temprature", 1),
        r"critics\[0\]\.temprature: unknown field; did you mean 'temperature'\?",
    ),
    (_with("voting.stratgy", "mean"), r"voting\.stratgy: unknown field; did you mean 'strategy'\?"),
    (_with("critics.0", "just a string"), r"critics\[0\]: must be a mapping"),
    (
        _with("schema_version", 99),
        r"schema_version: this panel file is version 99, but this Jurybox reads panel files "
        r"up to version 1; upgrade",
    ),
    (_with("schema_version", "one"), r"schema_version: must be a whole number"),
    (_with("schema_version", 0), r"schema_version: must be 1 or more"),
    # cross-field checks (panel_checks)
    (
        _with("critics.1.name", "strict"),
        r"critics\[1\]\.name: 'strict' is already the name of critics\[0\]",
    ),
    (
        _with("voting.strategy", "borda"),
        r"voting\.strategy: unknown strategy 'borda'; choose one of .*plurality",
    ),
    (
        _with("voting.strategy", "mean"),
        r"voting\.strategy: 'mean' aggregates scores but the scale is nominal",
    ),
    (
        _with("voting.fallback", "MAYBE"),
        r"voting\.fallback: 'MAYBE' is not a label of the scale; "
        r"labels: KEEP, REJECT, SPLIT, MERGE",
    ),
    (
        _with("voting.priority", ["REJECT", "DEFER"]),
        r"voting\.priority\[1\]: 'DEFER' is not a label",
    ),
    (_with("voting.error_label", "x"), r"voting\.error_label: 'x' is not a label"),
    (_with("voting.target_label", "x"), r"voting\.target_label: 'x' is not a label"),
    (_with("cascade.reject_label", "NO"), r"cascade\.reject_label: 'NO' is not a label"),
    (
        _with("voting.error_policy", "count_as"),
        r"voting\.error_label: error_policy 'count_as' needs the label",
    ),
    (
        _with("voting.thresholds", {"hi": 0.5}),
        r"voting\.thresholds: thresholds map a score .* the scale is nominal",
    ),
    (_with("voting.max_spread", 0.5), r"voting\.max_spread: a spread applies to scores"),
    (_with("voting.strategy", "any"), r"voting\.target_label: the 'any' strategy needs"),
    (
        _with("cascade.guard_tiers", [0, 3]),
        r"cascade\.guard_tiers\[1\]: no critic is in tier 3; tiers in use: 0, 1",
    ),
    (
        _with("critics.2.base_url", None),
        r"critics\[2\]\.base_url: vendor 'custom' needs the base URL",
    ),
    (_with("critics.0.vendor", "acme"), r"critics\[0\]\.vendor: unknown vendor 'acme'"),
    (_with("scale.labels", ["KEEP"]), r"scale: a nominal scale needs at least two labels"),
]


@pytest.mark.parametrize(("data", "message"), BAD, ids=[m[:40] for _, m in BAD])
def test_bad_configuration_gives_a_clear_message(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_panel(dumped(data))


def test_all_zero_weights() -> None:
    data = base_dict()
    for critic in data["critics"]:
        critic["weight"] = 0
    with pytest.raises(ConfigError, match="every critic has weight 0"):
        load_panel(dumped(data))


def test_score_scale_checks() -> None:
    data = base_dict()
    data["scale"] = {"kind": "score", "min": 0, "max": 1}
    data["voting"] = {"strategy": "plurality"}
    data["cascade"] = {}
    with pytest.raises(ConfigError, match="'plurality' votes on labels but the scale is a score"):
        load_panel(dumped(data))
    data["voting"] = {"strategy": "mean", "thresholds": {"hi": 1.5}}
    with pytest.raises(
        ConfigError, match=r"voting\.thresholds\['hi'\]: 1\.5 is outside the scale 0\.\.1"
    ):
        load_panel(dumped(data))
    data["voting"] = {"strategy": "mean", "error_policy": "count_as", "error_label": "x"}
    with pytest.raises(ConfigError, match="count_as' needs a label scale"):
        load_panel(dumped(data))
    data["voting"] = {"strategy": "spread"}
    with pytest.raises(ConfigError, match="'spread' strategy needs a maximum spread"):
        load_panel(dumped(data))


def test_several_problems_are_all_named() -> None:
    data = _with("critics.1.temperature", 9)
    data["critics"][0]["timeout_s"] = 0
    with pytest.raises(ConfigError) as caught:
        load_panel(dumped(data))
    assert "critics[0].timeout_s: must be more than 0" in str(caught.value)
    assert "critics[1].temperature: must be at most 2" in str(caught.value)


def test_check_panel_directly_on_a_model() -> None:
    critic = Critic(name="a", model="m", prompt_template="{x}")
    panel = Panel.model_construct(
        scale=Scale(kind="yesno"),
        critics=[critic, critic],
        voting=VotingConfig(),
        cascade=CascadeConfig(),
    )
    with pytest.raises(ConfigError, match="already the name"):
        check_panel(panel)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("critics: [\n  - name: a\n", r"YAML syntax error at line \d+, column \d+"),
        ("- just\n- a list\n", "expected a mapping with scale, critics and voting, got a list"),
        ("", "got nothing"),
        ("scale: {kind: yesno}\nscale: {kind: yesno}\n", "scale: the key appears twice"),
    ],
)
def test_unreadable_text(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_panel(text)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_panel(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="no such file"):
        load_panel(str(tmp_path / "nope.yaml"))


# ----------------------------------------------------------------------------- API keys

FAKE_KEY = "sk-proj-" + "A1b2C3d4" * 5


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (_with("critics.0.api_key", FAKE_KEY), "critics[0].api_key"),
        (
            _with("critics.0.extra", {"headers": {"Authorization": "Bearer abc"}}),
            "critics[0].extra.headers.Authorization",
        ),
        (_with("critics.0.api_key_env", FAKE_KEY), "critics[0].api_key_env"),
        (_with("description", f"our key is {FAKE_KEY}"), "description"),
        (_with("critics.1.extra", {"password": "hunter2"}), "critics[1].extra.password"),
    ],
)
def test_literal_keys_are_refused_on_load(data: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_panel(dumped(data))
    message = str(caught.value)
    assert message.startswith(f"{where}: this looks like a literal API key")
    assert "environment variable" in message and "api_key_env" in message
    assert FAKE_KEY not in message and "hunter2" not in message


def test_literal_keys_are_refused_on_save(panel: Panel, tmp_path: Path) -> None:
    leaky = panel.model_copy(deep=True)
    leaky.critics[0].extra["api_key"] = FAKE_KEY
    with pytest.raises(ConfigError, match="literal API key") as caught:
        save_panel(leaky, tmp_path / "p.yaml")
    assert FAKE_KEY not in str(caught.value)
    assert not (tmp_path / "p.yaml").exists()
    with pytest.raises(ConfigError, match="literal API key"):
        dump_panel(leaky)


def test_key_is_not_echoed_by_a_yaml_syntax_error() -> None:
    text = f"critics:\n  - name: a\n    note: {FAKE_KEY}\n   bad: [\n"
    with pytest.raises(ConfigError) as caught:
        load_panel(text)
    assert FAKE_KEY not in str(caught.value)


def test_key_variable_names_are_fine() -> None:
    assert find_secret(base_dict()) is None
    assert find_secret({"api_key_env": "OPENAI_API_KEY", "max_tokens": 5, "key": None}) is None


# ----------------------------------------------------------------------------- prompt imports

FOREIGN = textwrap.dedent(
    """\
    version: 2
    system_prompt: |
      You are a careful taxonomy reviewer.
    user_prompt_template: |
      Class: {{ name }}
      Description: {{description}}
      {# a Jinja comment #}
      Answer as {"label": "KEEP"} and nothing else: {{- name -}}
    """
)


def test_import_prompt_yaml_converts_placeholders_and_keeps_braces() -> None:
    critic = import_prompt_yaml(FOREIGN, name="imported", model="gpt-x", temperature=0.3)
    assert critic.name == "imported"
    assert critic.vendor == "simulated"
    assert critic.temperature == 0.3
    assert critic.system_prompt == "You are a careful taxonomy reviewer."
    assert critic.placeholders == ["name", "description"]
    scale = Scale(kind="nominal", labels=["KEEP", "REJECT"])
    messages = critic.build_messages({"name": "Cats", "description": "felines"}, scale)
    user = messages[1]["content"]
    assert 'Answer as {"label": "KEEP"} and nothing else:' in user
    assert "Jinja comment" not in user
    assert "Cats" in user and "felines" in user


def test_import_prompt_yaml_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "prompt.yaml"
    path.write_text(FOREIGN, encoding="utf-8")
    critic = import_prompt_yaml(path, name="p", model="m", vendor="openai")
    assert critic.vendor == "openai"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 1\nsystem_prompt: hi\n", "user_prompt_template: is required"),
        ("user_prompt_template: '{{ name | upper }}'", "Jinja expression Jurybox cannot evaluate"),
        ("user_prompt_template: '{% if x %}a{% endif %}'", "Jinja logic"),
        (
            "system_prompt: 'Hi {{ name }}'\nuser_prompt_template: '{{ name }}'",
            "system_prompt: uses",
        ),
        ("- a list", "expected a mapping"),
        (f"user_prompt_template: '{{{{ x }}}}'\napi_key: {FAKE_KEY}", "literal API key"),
    ],
)
def test_import_prompt_yaml_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        import_prompt_yaml(text, name="p", model="m")


def test_import_prompt_yaml_bad_critic_field() -> None:
    with pytest.raises(ConfigError, match=r"temperature: must be at most 2 \(got 7\)"):
        import_prompt_yaml("user_prompt_template: '{{ x }}'", name="p", model="m", temperature=7)


@pytest.mark.parametrize(
    ("jinja", "ours"),
    [
        ("{{ a }} and {{b}}", "{a} and {b}"),
        ('{"k": {{ v }}}', '{{"k": {v}}}'),
        ("{{- a -}}", "{a}"),
        ("no placeholders", "no placeholders"),
    ],
)
def test_convert_jinja_template(jinja: str, ours: str) -> None:
    assert convert_jinja_template(jinja) == ours


# ----------------------------------------------------------------------------- vendor limits


def limited_dict(limits: Any) -> dict[str, Any]:
    data = base_dict()
    data["limits"] = limits
    return data


def test_limits_round_trip_and_read_as_written(panel: Panel, tmp_path: Path) -> None:
    data = limited_dict({"simulated": {"max_concurrency": 2},
                         "custom": {"max_concurrency": 8, "requests_per_minute": 90}})
    limited = load_panel(dumped(data))
    assert limited.limits["simulated"].max_concurrency == 2
    assert limited.limits["simulated"].requests_per_minute is None
    assert limited.limits["custom"].requests_per_minute == 90.0
    text = dump_panel(limited)
    # Before the critics (the long part), unset limits left out.
    assert text.index("limits:") < text.index("critics:")
    assert "requests_per_minute: null" not in text
    assert load_panel(text) == limited
    save_panel(limited, tmp_path / "p.yaml")
    assert load_panel(tmp_path / "p.yaml") == limited
    assert panel_hash(load_panel(text)) == panel_hash(limited)


def test_a_panel_without_limits_keeps_its_file_and_hash(panel: Panel) -> None:
    # Panels saved before limits existed must keep their hash (their runs stay "the same panel").
    assert "limits" not in dump_panel(panel)
    assert panel_hash(panel_from_dict({**base_dict(), "limits": {}})) == panel_hash(panel)


@pytest.mark.parametrize(
    "limits",
    [
        {"simulated": {"max_concurrency": 2}},
        {"simulated": {"max_concurrency": 3}},
        {"simulated": {"requests_per_minute": 60}},
        {"simulated": {"max_concurrency": 2, "requests_per_minute": 60}},
        {"custom": {"max_concurrency": 2}},
    ],
)
def test_hash_changes_when_limits_change(panel: Panel, limits: dict[str, Any]) -> None:
    hashes = {panel_hash(panel)}
    hashes.add(panel_hash(panel_from_dict(limited_dict({"simulated": {"max_concurrency": 1}}))))
    hashes.add(panel_hash(panel_from_dict(limited_dict(limits))))
    assert len(hashes) == 3


BAD_LIMITS = [
    ({"openia": {"max_concurrency": 2}},
     r"limits\.openia: unknown vendor 'openia'; did you mean 'openai'\?.*simulated"),
    ({"acme": {"max_concurrency": 2}}, r"limits\.acme: unknown vendor 'acme'; limits are keyed"),
    ({"simulated": {"max_concurrency": 0}},
     r"limits\.simulated\.max_concurrency: must be more than 0 \(got 0\)"),
    ({"simulated": {"max_concurrency": -3}},
     r"limits\.simulated\.max_concurrency: must be more than 0 \(got -3\)"),
    ({"simulated": {"max_concurrency": 2.5}},
     r"limits\.simulated\.max_concurrency: must be a whole number \(got 2\.5\)"),
    ({"simulated": {"max_concurrency": True}},
     r"limits\.simulated\.max_concurrency: must be a whole number \(got True\)"),
    ({"simulated": {"max_concurrency": "8"}},
     r"limits\.simulated\.max_concurrency: must be a whole number"),
    ({"openai": {"requests_per_minute": 0}},
     r"limits\.openai\.requests_per_minute: must be more than 0 \(got 0\)"),
    ({"openai": {"requests_per_minute": -60.5}},
     r"limits\.openai\.requests_per_minute: must be more than 0 \(got -60\.5\)"),
    ({"openai": {"requests_per_minute": float("inf")}},
     r"limits\.openai\.requests_per_minute: must be a number"),
    ({"openai": {"max_concurency": 2}},
     r"limits\.openai\.max_concurency: unknown field; did you mean 'max_concurrency'\?"),
    ({"openai": {}}, r"limits\.openai: sets no limit; give max_concurrency"),
    ({"openai": 5}, r"limits\.openai: must be a mapping of fields"),
    ([{"openai": 5}], r"limits: must be a mapping of fields"),
]


@pytest.mark.parametrize(("limits", "message"), BAD_LIMITS, ids=[m[:40] for _, m in BAD_LIMITS])
def test_bad_limits_give_a_clear_message(limits: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_panel(dumped(limited_dict(limits)))


def test_bad_limits_on_the_model_directly() -> None:
    critic = Critic(name="a", model="m", prompt_template="{x}")
    with pytest.raises(ConfigError, match=r"limits\.gemnii: unknown vendor .*'gemini'"):
        Panel(scale=Scale(kind="yesno"), critics=[critic],
              limits={"gemnii": {"requests_per_minute": 10}})
