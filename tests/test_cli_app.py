"""`jurybox app`: what it starts, and the sentences it refuses with before starting anything.

The command replaces its process with Streamlit, so these tests call it only with input it
refuses; `tests/test_wheel_app.py` starts it for real from an installed wheel.
"""

from __future__ import annotations

import pathlib
import socket
import sys

import pytest

from judging.runs.commands.cli import main
from judging.runs.commands.cli_app import app_environment, app_script, streamlit_argv
from tests.fixtures_app import ROOT


def test_in_a_checkout_the_app_is_its_app_py() -> None:
    assert app_script() == ROOT / "app.py"


def test_streamlit_is_started_as_make_run_starts_it() -> None:
    argv = streamlit_argv(ROOT / "app.py", host="127.0.0.1", port=8600)
    assert argv[:5] == [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py")]
    options = dict(zip(argv[5::2], argv[6::2]))
    assert options == {
        "--server.address": "127.0.0.1", "--server.port": "8600", "--server.headless": "true",
        "--browser.gatherUsageStats": "false", "--server.fileWatcherType": "none",
    }


def test_host_defaults_to_this_machine_only() -> None:
    from judging.runs.commands.cli import build_parser

    args = build_parser().parse_args(["app"])
    assert (args.host, args.port, args.db) == ("127.0.0.1", 8501, None)


def test_db_is_handed_to_the_app_as_an_absolute_path(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JURYBOX_DB", "elsewhere.db")
    assert app_environment(pathlib.Path("mine.db"))["JURYBOX_DB"] == str(tmp_path / "mine.db")
    # Without --db the app keeps what the environment says.
    assert app_environment(None)["JURYBOX_DB"] == "elsewhere.db"


def test_a_db_in_a_missing_folder_is_refused(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-folder" / "app.db"
    assert main(["app", "--db", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jurybox: error: The folder ") and "does not exist" in err
    assert err.count("\n") == 1


def test_a_busy_port_is_refused(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JURYBOX_DB", str(tmp_path / "app.db"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["app", "--port", str(port)]) == 2
    assert capsys.readouterr().err == (
        f"jurybox: error: port {port} on 127.0.0.1 is in use (another app is serving there); "
        "choose another --port\n")


@pytest.mark.parametrize("port", ["0", "70000", "web"])
def test_a_port_outside_1_to_65535_is_a_usage_error(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["app", "--port", port]) == 2
    assert "is not a port number" in capsys.readouterr().err
