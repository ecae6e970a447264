"""`pip install jurybox` gives the web app too: the wheel built from this checkout, installed
into a fresh virtual environment outside it, starts the app with `jurybox app` and serves Home.

The wheel is built offline (`pip wheel --no-deps --no-build-isolation`, with the setuptools the
test extras install) from a copy of the checkout, so no `build/` folder of an earlier build can
slip stale files into it. The fresh environment borrows this one's dependencies through a
`.pth` line (nothing is downloaded) and gets the wheel alone with `--no-deps`; it is run from a
temp folder with no PYTHONPATH, so the checkout cannot be what it imports.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures_app import ROOT, Watch, free_port, settled, wait_healthy

pytestmark = pytest.mark.timeout(120)

# Never part of a wheel: the checkout's own build leftovers, databases and caches.
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "*.db",
    "*.db-wal", "*.db-shm", "secrets.toml", "tests", "benchmarks", ".mypy_cache", ".ruff_cache",
)


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without anything that could point Python at the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "JURYBOX_DB", "VIRTUAL_ENV")
           and not k.endswith("_API_KEY")}
    return {**env, **extra}


def _run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=90, **kwargs)
    assert done.returncode == 0, f"{argv[:4]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The wheel of this checkout, built offline from a clean copy of it."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)
    _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
          "--no-index", "--wheel-dir", str(work / "dist"), "--quiet"], cwd=work)
    (built,) = (work / "dist").glob("jurybox-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A fresh venv outside the checkout holding the wheel; its dependencies are this venv's.

    Returns:
        The fresh venv's folder.
    """
    home = tmp_path_factory.mktemp("installed")
    env_dir = home / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   cwd=home, env=_clean_env()).stdout.strip()
    # A bare path line (not `import site; site.addsitedir`): this venv's own .pth files, the
    # editable install of the checkout among them, are not run in the fresh one.
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    pathlib.Path(purelib, "borrowed-dependencies.pth").write_text("\n".join(ours) + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
          "--no-index", "--quiet", str(wheel)], cwd=home, env=_clean_env())
    return env_dir


@pytest.fixture(scope="module")
def served(installed: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`jurybox app --port N --db PATH` of the fresh venv, run from a temp folder."""
    cwd = tmp_path_factory.mktemp("cwd")
    db = tmp_path_factory.mktemp("data") / "wheel.db"
    port = free_port()
    log_path = cwd / "app.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(installed / "bin" / "jurybox"), "app", "--port", str(port), "--db", str(db)],
            cwd=cwd, env=_clean_env(HOME=str(cwd)), stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(url, process, timeout=60)
        except (RuntimeError, TimeoutError) as exc:
            raise AssertionError(f"{exc}:\n{log_path.read_text(errors='replace')[-3000:]}") from None
        yield {"url": url, "db": db, "log": log_path, "venv": installed, "cwd": cwd}
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def test_the_wheel_holds_the_app(wheel: pathlib.Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {"jurybox_app/app.py", "jurybox_app/.streamlit/config.toml",
                "jurybox_app/static/favicon.png", "judging/demo/demo_panel.yaml",
                "judging/demo/taxonomy_candidates.csv", "storage/migrations.py"}
    for folder, prefix in (("pages", "jurybox_app/pages"), ("judging", "judging"),
                           ("storage", "storage")):
        expected |= {f"{prefix}/{p.relative_to(ROOT / folder).as_posix()}"
                     for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts}
    assert not expected - names, f"missing from the wheel: {sorted(expected - names)}"
    tops = {name.split("/")[0] for name in names if not name.startswith("jurybox-")}
    assert tops == {"judging", "storage", "jurybox_app"}
    # Only the app's script from the checkout's top: no setup.py, README, database or secrets.
    assert {n for n in names if n.startswith("jurybox_app/") and n.count("/") == 1} == {
        "jurybox_app/app.py"}


def test_installed_app_serves_home_over_http(served: dict[str, Any]) -> None:
    python = served["venv"] / "bin" / "python"
    where = _run([str(python), "-c", "import importlib.util as u, judging, storage, sys; "
                  "print(judging.__file__); print(storage.__file__); "
                  "print(u.find_spec('app'), u.find_spec('pages')); print('\\n'.join(sys.path))"],
                 cwd=served["cwd"], env=_clean_env()).stdout.splitlines()
    assert all(pathlib.Path(f).is_relative_to(served["venv"]) for f in where[:2]), where[:2]
    # The checkout's top-level app.py and pages/ are not importable: the app runs from the wheel.
    assert where[2] == "None None"
    assert str(ROOT) not in where[3:], "the checkout is on the fresh venv's path"
    with urllib.request.urlopen(served["url"] + "/_stcore/health", timeout=10) as reply:
        assert reply.read() == b"ok"
    with urllib.request.urlopen(served["url"] + "/", timeout=10) as reply:
        # The page itself: Streamlit's frontend, which then draws Home over its websocket.
        assert reply.status == 200 and b"<title>Streamlit</title>" in reply.read()


@pytest.mark.browser
def test_installed_app_draws_home_in_a_browser(served: dict[str, Any], app_page: Any) -> None:
    from playwright.sync_api import expect

    watch = Watch(app_page, served["url"])
    app_page.goto(served["url"] + "/")
    expect(app_page.get_by_role("heading", name="Jurybox")).to_be_visible()
    expect(app_page.get_by_role("button", name="Try the demo")).to_be_visible()
    settled(app_page)
    assert watch.troubles() == {"dialogs": [], "elsewhere": [], "failed": [], "console": []}
    # `--db` reached the app: Home opened (and migrated) that file, not ./jurybox.db.
    assert served["db"].is_file()
    assert not (served["cwd"] / "jurybox.db").exists()
