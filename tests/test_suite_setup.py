"""The suite's own machinery holds under parallel workers: a module-scoped fixture is made once
however many workers there are, and an app server whose free port was taken before it bound
it starts on another."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import textwrap

import pytest

import tests.fixtures_app as fixtures_app

ROOT = pathlib.Path(__file__).resolve().parent.parent

MODULE = textwrap.dedent(
    """
    import os, pytest

    @pytest.fixture(scope="module")
    def shared():
        with open(os.environ["SETUPS"], "a") as log:
            log.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")

    @pytest.mark.parametrize("n", range(8))
    def test_uses_it(shared, n):
        pass
    """
)


def test_a_module_fixture_is_made_once_under_two_workers(tmp_path: pathlib.Path) -> None:
    """Two workers with this project's settings (`-c pyproject.toml`): the eight tests sharing
    a module-scoped fixture run on one worker, which makes it once."""
    (tmp_path / "test_shared.py").write_text(MODULE, encoding="utf-8")
    setups = tmp_path / "setups.txt"
    env = {**os.environ, "SETUPS": str(setups)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
         str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), "-n", "2", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "8 passed" in done.stdout
    assert len(setups.read_text().splitlines()) == 1, setups.read_text()


def test_an_app_server_whose_port_was_taken_starts_on_another(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = [taken.getsockname()[1]]
        real_free_port = fixtures_app.free_port
        # The first "free" port is the one another process already holds.
        monkeypatch.setattr(fixtures_app, "free_port",
                            lambda: ports.pop() if ports else real_free_port())
        with fixtures_app.running_app(tmp_path / "app.db") as server:
            assert server["port"] != taken.getsockname()[1]
            with socket.create_connection(("127.0.0.1", server["port"]), timeout=5):
                pass
