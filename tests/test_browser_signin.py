"""Sign-in for team use, in Chromium, against a real OIDC provider on 127.0.0.1
(`oidc-provider-mock`, Authlib's provider in a Flask app): a visitor sees only the sign-in
screen; a team member signs in, overrides an item and is stored as its reviewer without typing
a name; a member who is not a lead cannot delete a dataset; an account outside the team list is
refused and sees no page."""

from __future__ import annotations

import pathlib
import re
import secrets
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import werkzeug.serving
from oidc_provider_mock import User
from oidc_provider_mock import app as oidc_app

from storage.db import open_db
from storage.reviewing.overrides import override_history
from tests.fixtures_app import BROWSER_TIMEOUT_MS, as_shown, free_port, running_app, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

LEAD, MEMBER, OUTSIDER = "ana@team.test", "bob@team.test", "eve@elsewhere.test"


def _expect() -> Any:
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    return expect


@pytest.fixture
def oidc_provider() -> Iterator[str]:
    """An OIDC provider on 127.0.0.1 with three one-click users; yields its issuer URL."""
    users = [User(sub=email.split("@")[0], claims={"email": email, "name": email})
             for email in (LEAD, MEMBER, OUTSIDER)]
    server = werkzeug.serving.make_server("127.0.0.1", 0, oidc_app(user_claims=users),
                                          threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)


@pytest.fixture
def team_app(oidc_provider: str, demo_db: tuple[pathlib.Path, int],
             tmp_path: pathlib.Path) -> Iterator[dict[str, Any]]:
    """The app over the demo run, with `[auth]` on that provider and a `[team]` list."""
    path, run_id = demo_db
    port = free_port()
    secrets_file = tmp_path / "secrets.toml"
    secrets_file.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(16)}"\n'
        'client_id = "jurybox-test"\n'
        'client_secret = "not-a-real-secret"\n'
        f'server_metadata_url = "{oidc_provider}/.well-known/openid-configuration"\n'
        "\n[team]\n"
        'allowed = ["ana@team.test", "@team.test"]\n'
        'leads = ["ana@team.test"]\n',
        encoding="utf-8",
    )
    with running_app(path, port=port, secrets=secrets_file) as app:
        yield {**app, "run": run_id}


def _sign_in(page: Any, app: dict[str, Any], who: str) -> None:
    """From the app's sign-in screen through the provider's form, as `who`, and back."""
    page.goto(app["url"] + "/")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name=who.split("@")[0], exact=True).click()  # provider's page
    page.wait_for_url(re.compile(re.escape(app["url"])))


def test_a_visitor_sees_only_the_sign_in_screen(app_page: Any, team_app: dict[str, Any]) -> None:
    expect = _expect()
    app_page.goto(f"{team_app['url']}/review?run={team_app['run']}")
    expect(app_page.get_by_role("button", name="Sign in")).to_be_visible()
    settled(app_page)
    expect(app_page.get_by_test_id("stSidebarNav")).to_have_count(0)
    expect(app_page.get_by_role("heading", name="Review", exact=True)).to_have_count(0)


def test_a_member_signs_in_and_is_the_reviewer_of_the_override(
    app_page: Any, team_app: dict[str, Any]
) -> None:
    expect = _expect()
    _sign_in(app_page, team_app, MEMBER)
    sidebar = app_page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_text(as_shown(f"Signed in as {MEMBER}"))).to_be_visible()
    app_page.goto(f"{team_app['url']}/review?run={team_app['run']}")
    main = app_page.get_by_test_id("stMain")
    app_page.wait_for_url(re.compile(r"item="))
    item = re.search(r"item=([^&]+)", app_page.url).group(1)
    expect(main.get_by_role("heading", name=f"Item {item}", exact=True)).to_be_visible()
    settled(app_page)
    reviewer = main.get_by_role("textbox", name="Reviewer")
    expect(reviewer).to_have_value(MEMBER)
    expect(reviewer).to_be_disabled()  # never typed
    main.get_by_test_id("stRadio").get_by_text("KEEP", exact=True).click()
    main.get_by_label("Note (why)").fill("signed-in decision")
    main.get_by_role("button", name="Save and go to the next item").click()
    expect(main.get_by_text(f"Saved KEEP for {item}.")).to_be_visible()
    (saved,) = override_history(open_db(team_app["db"]), team_app["run"], item)
    assert (saved["label"], saved["note"], saved["reviewer"]) == \
        ("KEEP", "signed-in decision", MEMBER)

    # Not a lead: the dataset's Delete is refused.
    app_page.goto(team_app["url"] + "/datasets")
    main.get_by_role("button", name="Delete this dataset").click()
    expect(app_page.get_by_text("Only a lead of this team may delete a dataset.")).to_be_visible()
    expect(app_page.get_by_role("button", name="Yes, delete it")).to_be_disabled()


def test_a_lead_is_shown_as_lead(app_page: Any, team_app: dict[str, Any]) -> None:
    expect = _expect()
    _sign_in(app_page, team_app, LEAD)
    expect(app_page.get_by_test_id("stSidebar").get_by_text(as_shown(f"Signed in as {LEAD} · lead"))
           ).to_be_visible()


def test_an_account_outside_the_team_is_refused(app_page: Any, team_app: dict[str, Any]) -> None:
    expect = _expect()
    _sign_in(app_page, team_app, OUTSIDER)
    expect(app_page.get_by_text(re.compile(r"not on this Jurybox's team list"))).to_be_visible()
    settled(app_page)
    expect(app_page.get_by_test_id("stSidebarNav")).to_have_count(0)
    app_page.goto(f"{team_app['url']}/review?run={team_app['run']}")
    expect(app_page.get_by_text(re.compile(r"not on this Jurybox's team list"))).to_be_visible()
    settled(app_page)
    expect(app_page.get_by_role("heading", name="Review", exact=True)).to_have_count(0)
