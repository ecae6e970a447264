"""Fixtures of the app's tests: a temp database for AppTest (empty, or holding a finished demo
run), and a running `streamlit run` server plus a Chromium page for the browser tests."""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import streamlit as st

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = pathlib.Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def shown(markdown: str) -> str:
    """The text a reader sees for markdown made with `pages.ui.text_format.plain` (AppTest gives an
    alert's or caption's raw markdown): backslash escapes resolved, invisible joiners dropped."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def as_shown(text: str) -> re.Pattern[str]:
    """A pattern for `text` as the page shows it: exactly, give or take invisible joiners.

    The joiner is written as the escape `\\u2060` (Python and JavaScript regexes both read
    it): Playwright's selector parser refuses the raw character.
    """
    # "/" escaped too: Playwright writes the pattern into a selector between slashes.
    return re.compile("\\u2060?".join(re.escape(ch).replace("/", "\\/") for ch in text))


def _clear_streamlit_caches() -> None:
    # cache_resource is shared by every AppTest of the process: without this one test's job
    # registry (bound to another database) would leak into the next.
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def app_db(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pathlib.Path]:
    """A fresh, empty JURYBOX_DB for one AppTest, run from the project root, with clean caches."""
    path = tmp_path / "app.db"
    monkeypatch.setenv("JURYBOX_DB", str(path))
    monkeypatch.chdir(ROOT)
    _clear_streamlit_caches()
    yield path
    _clear_streamlit_caches()


def make_demo_db(path: pathlib.Path) -> int:
    """Fill `path` with the demo dataset and a FINISHED demo run, without the UI.

    Returns:
        The run id.
    """
    from judging.demo import demo_dataset_path, demo_panel_path
    from judging.panel.panel_files import load_panel
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.db import open_db
    from storage.results.runs import get_run

    db = open_db(path)
    try:
        parsed = read_dataset(demo_dataset_path(), id_column="id", gold_column="gold")
        dataset = save_dataset(db, parsed, name="Demo: taxonomy candidates")
        run_id = prepare_run(db, dataset_id=dataset.id, panel=load_panel(demo_panel_path()))
        job = JobRegistry().start_run(str(path), run_id)
        assert job.wait(120), "the demo run did not finish in 120 s"
        assert get_run(db, run_id)["status"] == "done", get_run(db, run_id)["error"]
        # Fold the WAL into the main file so a plain file copy is the whole database.
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return run_id


@pytest.fixture(scope="session")
def demo_db_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, int]:
    """One finished demo run per test session (about 10 s against the simulator), copied by
    `demo_db` for each test that needs it."""
    path = tmp_path_factory.mktemp("demo") / "template.db"
    return path, make_demo_db(path)


@pytest.fixture
def demo_db(
    demo_db_template: tuple[pathlib.Path, int], app_db: pathlib.Path
) -> tuple[pathlib.Path, int]:
    """`app_db` holding a private copy of the finished demo run. Returns (path, run id)."""
    template, run_id = demo_db_template
    shutil.copyfile(template, app_db)
    return app_db, run_id


# -- the real app, for browser tests ------------------------------------------------------------


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    """Poll Streamlit's health endpoint until it answers "ok" (or fail with the server's log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"streamlit did not become healthy at {url} within {timeout:.0f} s")


@contextlib.contextmanager
def running_app(
    db_path: pathlib.Path, *, address_flag: bool = True, port: int | None = None,
    secrets: pathlib.Path | None = None,
) -> Iterator[dict[str, Any]]:
    """`streamlit run app.py` on a free 127.0.0.1 port with `db_path` as JURYBOX_DB.

    Args:
        db_path: the database the app opens.
        address_flag: pass `--server.address 127.0.0.1`; False leaves the address to
            `.streamlit/config.toml` (the test of what a bare `streamlit run app.py` binds).
        port: the port to serve on (default: a free one), for a test that must know it first.
        secrets: the only secrets file the app reads (default: none, so a developer's own
            `.streamlit/secrets.toml` cannot change what a test sees).

    Yields:
        {"url": base URL, "db": database path, "log": server log path, "port": the port}.
    """
    log_path = db_path.with_suffix(".log")
    env = {**os.environ, "JURYBOX_DB": str(db_path)}
    # No vendor key may reach the server: the demo must run on the simulated vendor.
    for name in [n for n in env if n.endswith("_API_KEY")]:
        env.pop(name)
    address = ["--server.address", "127.0.0.1"] if address_flag else []

    def start(on_port: int) -> subprocess.Popen[bytes]:
        with open(log_path, "wb") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py",
                 "--server.headless", "true", "--server.port", str(on_port), *address,
                 "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false",
                 "--secrets.files", str(secrets or db_path.with_suffix(".no-secrets.toml"))],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )

    chosen = port
    for attempt in range(3):
        port = chosen or free_port()
        process = start(port)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, process)
            break
        except (RuntimeError, TimeoutError):
            _stop(process)
            # A free port can be taken by another process (a parallel test worker) before the
            # server binds it: then, unless the caller chose the port, start on another one.
            taken = b"is not available" in log_path.read_bytes()
            if chosen or not taken or attempt == 2:
                raise
    try:
        yield {"url": url, "db": db_path, "log": log_path, "port": port}
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One app server (and database) shared by the browser tests of a module."""
    with running_app(tmp_path_factory.mktemp("app") / "browser.db") as server:
        yield server


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (no browser download).

    Missing Chromium: a failure on CI (env CI set), else a skip with the reason.
    """
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: apt-get install -y chromium"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


# Actions, waits and `expect` checks give up after this long: generous, because a loaded machine
# draws a page in seconds, not milliseconds (`expect`'s own default is only 5 s). Seen: with the
# suite in two workers beside other work (load 15 on two cores), a fresh server's first page
# took over 30 s. A wait ends as soon as what it waits for shows, so a passing test is no slower.
BROWSER_TIMEOUT_MS = 60_000


@pytest.fixture
def app_page(chromium_browser: Any) -> Iterator[Any]:
    """A fresh browser page (downloads allowed) with a generous default timeout."""
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    context = chromium_browser.new_context(
        accept_downloads=True, viewport={"width": 1500, "height": 1000}
    )
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    tab = context.new_page()
    try:
        yield tab
    finally:
        context.close()


def settled(page: Any) -> None:
    """Wait until the script run is over (Streamlit marks the app root for its own tests): no
    element of the previous run is left on the page, and what it logs late is still logged."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")



def choose_option(page: Any, selectbox: Any, name: str) -> None:
    """Pick `name` in a Streamlit selectbox. The list opens on a click, but a redraw of the box
    (a delta of the same run landing just after the click) closes it again: open it until the
    option shows, a few times, then pick it."""
    from playwright.sync_api import expect

    option = page.get_by_role("option", name=name, exact=True)
    for _ in range(4):
        selectbox.click()
        try:
            expect(option).to_be_visible(timeout=5000)
            break
        except AssertionError:
            page.keyboard.press("Escape")
    option.click()


def name_the_reviewer(page: Any, name: str) -> None:
    """Type the reviewer's name on Review, as a user does first, and wait for the decision form
    it unlocks (the name is committed with Enter, never raced by a click on Save)."""
    from playwright.sync_api import expect

    main = page.get_by_test_id("stMain")
    field = main.get_by_role("textbox", name="Reviewer")
    field.fill(name)
    field.press("Enter")
    # The decision's form comes first (a rubric item has a second, folded: a criterion mark).
    expect(main.get_by_test_id("stForm").first).to_be_visible()
    settled(page)

# Counts the app root's moves away from "notRunning" (a MutationObserver sees every one, however
# short the script run): the wait below cannot miss a run that starts and ends between polls.
_COUNT_RUNS = """() => {
  const root = document.querySelector('[data-testid="stApp"]');
  if (window.__jbRunObserver) window.__jbRunObserver.disconnect();
  window.__jbRuns = 0;
  window.__jbRunObserver = new MutationObserver(() => {
    if (root.getAttribute('data-test-script-state') !== 'notRunning') window.__jbRuns += 1;
  });
  window.__jbRunObserver.observe(root, {attributes: true,
                                        attributeFilter: ['data-test-script-state']});
}"""
_RUN_OVER = """() => window.__jbRuns > 0 && document.querySelector('[data-testid="stApp"]')
  .getAttribute('data-test-script-state') === 'notRunning'"""


@contextlib.contextmanager
def script_run(page: Any) -> Iterator[None]:
    """Wait, after the block, for the script run its action started to be over.

    For an action whose effect the page does not show (a checkbox that changes what a later
    download builds): `settled` right after the click could pass before that run began.
    """
    settled(page)
    page.evaluate(_COUNT_RUNS)
    yield
    # A loaded machine (the suite beside a CPU hog) can take longer than the default 30 s for
    # the first run after a page load; the wait still ends as soon as the run is over.
    page.wait_for_function(_RUN_OVER, timeout=90_000)

class Watch:
    """What a page does that it must never do: dialogs, requests to other hosts, failed
    requests, console errors and warnings (Vega's included).

    Streamlit's frontend, loaded at a page's URL, first probes `/<page>/_stcore/health` and
    `host-config` (404) before the root; no supported setting changes this
    (https://github.com/streamlit/streamlit/issues/7074). Those two probes, and the console
    lines reporting them, are the only failures allowed.
    """

    PROBE = re.compile(r"^/[a-z_]+/_stcore/(health|host-config)$")

    def __init__(self, page: Any, origin: str) -> None:
        self.dialogs: list[str] = []
        self.elsewhere: list[str] = []
        self.failed: list[str] = []
        self.console: list[str] = []
        self.origin = origin
        page.on("dialog", self._dialog)
        page.on("request", self._request)
        page.on("response", self._response)
        # ERR_ABORTED: a request the browser dropped because the page moved on to another URL.
        page.on("requestfailed", lambda r: None if r.failure == "net::ERR_ABORTED"
                else self.failed.append(f"failed {r.url} {r.failure}"))
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _request(self, request: Any) -> None:
        parts = urlsplit(request.url)
        if parts.scheme in ("data", "blob", "about"):
            return
        if f"{parts.scheme}://{parts.netloc}" != self.origin:
            self.elsewhere.append(request.url)

    def _response(self, response: Any) -> None:
        if response.status >= 400 and not self.PROBE.match(urlsplit(response.url).path):
            self.failed.append(f"{response.status} {response.url}")

    def _console(self, message: Any) -> None:
        if message.type not in ("error", "warning"):
            return
        where = urlsplit(message.location.get("url") or "").path
        if "Failed to load resource" in message.text and self.PROBE.match(where):
            return
        self.console.append(f"{message.type}: {message.text} ({message.location.get('url')})")

    def troubles(self) -> dict[str, list[str]]:
        """Everything seen that should not have happened (all lists empty on a clean walk)."""
        return {"dialogs": self.dialogs, "elsewhere": self.elsewhere, "failed": self.failed,
                "console": self.console}
