"""Who is using the app: one person on this machine, or a team member signed in through OIDC.

Single-user is the default: the app listens on 127.0.0.1 only (`.streamlit/config.toml`) and a
reviewer types their name. A team server adds an `[auth]` table to Streamlit's secrets
(Streamlit's own `st.login`, any OIDC provider) and a `[team]` table:

    [team]
    allowed = ["ana@example.org", "@example.org"]   # emails, or "@domain" for a whole domain
    leads = ["ana@example.org"]                     # may delete datasets

Then every page needs a signed-in user whose email is allowed (nobody is, until listed: a
provider such as Google signs in anyone with an account), and the reviewer of every override
is the signed-in email, never typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitSecretNotFoundError

from pages.ui.text_format import plain

TEAM_TABLE = "team"


@dataclass(frozen=True)
class TeamPolicy:
    """Who may enter and who leads, from the `[team]` secrets table (emails lower-cased)."""

    allowed: tuple[str, ...] = ()
    leads: tuple[str, ...] = ()

    @classmethod
    def from_table(cls, table: Mapping[str, Any] | None) -> TeamPolicy:
        """Read `allowed` and `leads` (lists of emails or "@domain").

        Raises:
            ValueError: a list is not a list of strings (the sentence names the setting).
        """
        table = table or {}
        lists = {}
        for name in ("allowed", "leads"):
            value = table.get(name, [])
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ValueError(f'[{TEAM_TABLE}] {name} must be a list of emails or "@domain" '
                                 f'strings, e.g. {name} = ["ana@example.org", "@example.org"]')
            lists[name] = tuple(v.strip().lower() for v in value if v.strip())
        return cls(allowed=lists["allowed"], leads=lists["leads"])

    def admits(self, email: str | None) -> bool:
        return _listed(email, self.allowed)

    def is_lead(self, email: str | None) -> bool:
        return _listed(email, self.leads)


def _listed(email: str | None, entries: tuple[str, ...]) -> bool:
    local, _, domain = (email or "").strip().lower().rpartition("@")
    if not local or not domain:  # no address, or only half of one
        return False
    return f"{local}@{domain}" in entries or f"@{domain}" in entries


@dataclass(frozen=True)
class Visitor:
    """The person using this session: `email` is None in single-user mode.

    `barrier` is why a team server lets this visitor see no page yet ("sign in", or the
    sentence of a refusal); None once they may enter.
    """

    email: str | None = None
    lead: bool = False
    barrier: str | None = None

    @property
    def signed_in(self) -> bool:
        return self.email is not None

    @property
    def may_delete(self) -> bool:
        return not self.signed_in or self.lead


SIGN_IN = "sign in"


def _secret(name: str) -> Any:
    try:
        return st.secrets.get(name)
    except (StreamlitSecretNotFoundError, FileNotFoundError):  # no secrets file at all
        return None


def auth_configured() -> bool:
    """True when Streamlit's secrets hold an `[auth]` table (team mode)."""
    return _secret("auth") is not None


def _providers(auth: Mapping[str, Any]) -> list[str | None]:
    """`st.login` takes no provider when `[auth]` holds one provider's settings itself, else
    the name of each `[auth.<name>]` table."""
    if "client_id" in auth:
        return [None]
    return [name for name, value in auth.items() if hasattr(value, "get")]


def visitor() -> Visitor:
    """The person using this session (single-user without `[auth]`); in team mode a visitor
    not yet signed in, or not on the team list, carries the `barrier` that keeps them out."""
    auth = _secret("auth")
    if auth is None:
        return Visitor()
    try:
        policy = TeamPolicy.from_table(_secret(TEAM_TABLE))
    except ValueError as error:
        return Visitor(barrier=f"Sign-in is set up, but the team list is not readable: {error}.")
    if not st.user.is_logged_in:
        return Visitor(barrier=SIGN_IN)
    email = str(st.user.get("email") or "")
    if not policy.allowed:
        return Visitor(barrier="Sign-in is set up, but nobody is allowed in yet: list the "
                               f'team\'s emails (or "@domain") under [{TEAM_TABLE}] allowed in '
                               "the secrets file.")
    if not policy.admits(email):
        shown = plain(email) if email else "an account without an email address"
        return Visitor(barrier=f"You are signed in as {shown}, which is not on this Jurybox's "
                               "team list. Ask a lead to add your email (or its @domain) to "
                               f"[{TEAM_TABLE}] allowed.")
    return Visitor(email=email.lower(), lead=policy.is_lead(email))


def barrier_screen(person: Visitor) -> None:
    """The only screen a visitor kept out sees: the sign-in buttons, or why they are refused
    (with Sign out, to try another account). Ends the script run."""
    st.title("Jurybox")
    if person.barrier == SIGN_IN:
        st.write("This Jurybox is shared by a team: sign in to review.")
        for provider in _providers(_secret("auth") or {}):
            label = "Sign in" if provider is None else f"Sign in with {provider}"
            if st.button(label, type="primary", icon=":material/login:",
                         key=f"sign_in.{provider}"):
                if provider is None:
                    st.login()
                else:
                    st.login(provider)
    else:
        st.error(person.barrier)
        if st.user.is_logged_in and st.button("Sign out", icon=":material/logout:",
                                               key="sign_out_refused"):
            st.logout()
    st.stop()


def reviewer_field(key: str, person: Visitor) -> str:
    """The reviewer of an override: the signed-in email (shown, not editable), else the name
    typed in this session, remembered as soon as it is typed (`st.session_state["reviewer"]`:
    Streamlit forgets a widget's value when its page is left, this key it keeps)."""
    if person.email is not None:
        st.text_input("Reviewer", value=person.email, disabled=True, key=f"{key}.signed_in",
                      help="From your sign-in.")
        return person.email
    if key not in st.session_state:  # the name typed last time, on any page or run
        st.session_state[key] = st.session_state.get("reviewer", "")
    name = str(st.text_input("Reviewer", key=key))
    if name.strip():
        remember_reviewer(name)
    return name


def remember_reviewer(name: str) -> None:
    """Keep the name just used, for the next field that asks (single-user mode)."""
    st.session_state["reviewer"] = name.strip()
