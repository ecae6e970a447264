"""Who may enter a team server and who leads (`pages.ui.team_view.TeamPolicy`), and single-user mode
(no `[auth]`): no sign-in, a typed reviewer, every action open."""

from __future__ import annotations

import pytest

from pages.ui.team_view import TeamPolicy, Visitor


def test_emails_and_domains_are_admitted_case_blind():
    policy = TeamPolicy.from_table({"allowed": ["Ana@Example.org", "@team.test"],
                                    "leads": ["ana@example.org"]})
    assert policy.admits("ana@example.org") and policy.admits("ANA@EXAMPLE.ORG")
    assert policy.admits("bob@team.test")
    assert not policy.admits("bob@example.org")
    assert not policy.admits("eve@team.test.evil.test")  # a domain is matched whole
    assert not policy.admits("mallory@notteam.test")
    assert policy.is_lead("ana@example.org") and not policy.is_lead("bob@team.test")


@pytest.mark.parametrize("email", [None, "", "no-at-sign", "@team.test", "bob@"])
def test_no_address_or_half_of_one_is_never_admitted(email):
    assert not TeamPolicy.from_table({"allowed": ["@team.test", "bob@"]}).admits(email)


def test_an_empty_or_missing_list_admits_nobody():
    assert not TeamPolicy.from_table(None).admits("ana@example.org")
    assert not TeamPolicy.from_table({"allowed": []}).admits("ana@example.org")


@pytest.mark.parametrize("table", [{"allowed": "ana@example.org"}, {"leads": [1, 2]}])
def test_a_list_that_is_not_a_list_of_strings_is_a_sentence(table):
    with pytest.raises(ValueError, match=r'must be a list of emails or "@domain"'):
        TeamPolicy.from_table(table)


def test_single_user_may_do_everything_and_a_member_only_what_a_member_may():
    assert Visitor().may_delete and not Visitor().signed_in
    assert not Visitor(email="bob@team.test").may_delete
    assert Visitor(email="ana@example.org", lead=True).may_delete
