"""Search patterns (issue 47 N1): the reference's regex answers, at a bounded cost."""

from __future__ import annotations

import re
import time
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from officegym.envs.workplace import patterns
from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.patterns import (
    MATCH_BUDGET_S,
    MAX_PATTERN_CHARS,
    PatternTooSlow,
    SearchPattern,
    literal_braces_and_brackets,
)

TEXTS = ["raj.patel@atlas.com", "Alpha Board", "Back end", "aab", "ss", "SS", "ß", "K", "ſ", "ﬀ", "σς",
         "a b\n c", "123-45", "{e<=1}", "[:a]", "x{,}", "Quarterly Review"]
# Pieces of patterns, the awkward ones included (counts, braces, sets, escapes, case folding).
PIECES = [*"aAbB.|*+?(){}[]^$\\-:,0123s_@ e<=", "\\d", "\\w", "\\s", "\\b", "(?:", "(?i)", "[^", "{1,2}",
          "{e<=1}", "[[:alpha:]]", "[:", "\\1", "(?=", "(?!", "(?<=", "ſ", "K", "ß", "σ", "ς", "Σ", "ﬀ", "\\x41",
          "\\u0041", "\\N{LATIN SMALL LETTER A}", "\\Z", "\\A", "{,}", "{}", "{2}", "]", "[]"]


def reference_hits(pattern: str) -> list[bool] | None:
    """What `str.contains(pattern, case=False)` answers per text (None: re refuses the pattern)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            rx = re.compile(pattern, re.IGNORECASE)
        except (re.error, OverflowError, RecursionError):
            return None
    return [rx.search(t) is not None for t in TEXTS]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=7).map("".join))
def test_answers_equal_re_for_any_pattern_re_accepts(pattern):
    expected = reference_hits(pattern)
    if expected is None:
        with pytest.raises((re.error, OverflowError, RecursionError)):
            SearchPattern(pattern)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [SearchPattern(pattern).matches(t) for t in TEXTS] == expected, pattern


@pytest.mark.parametrize("pattern", ["a*{e<=1}", "(?:x{e})+A", "[[:alpha:]]+", "(a|b)[]x{]", "\\N{LATIN SMALL LETTER A}+"])
def test_regex_only_syntax_reads_as_re_reads_it(pattern):
    assert [SearchPattern(pattern).matches(t) for t in TEXTS] == reference_hits(pattern)


def test_escaping_keeps_counts_and_escapes():
    assert literal_braces_and_brackets("a{2,3}b{e<=1}[[:x:]]\\{\\N{DIGIT ONE}{,}") == \
        "a{2,3}b\\{e<=1}[\\[:x:]]\\{\\N{DIGIT ONE}{,}"


def test_a_catastrophic_pattern_fails_within_its_budget():
    rx = SearchPattern("(a|aa)+$")
    started = time.monotonic()
    with pytest.raises(PatternTooSlow, match="took longer than"):
        rx.matches("a" * 60 + "!")
    assert time.monotonic() - started < MATCH_BUDGET_S + 1.0


def test_an_overlong_pattern_is_refused_unread():
    with pytest.raises(PatternTooSlow, match="characters"):
        SearchPattern("a" * (MAX_PATTERN_CHARS + 1))


def _slow_task_session(env):
    s = env.session(None)
    s.call("project_management_create_task", {"task_name": "a" * 60 + "!", "assigned_to_email": "bo.kim@acme.com",
                                              "list_name": "Backlog", "due_date": "2023-12-01", "board": "Back end"})
    return s


@pytest.mark.parametrize("tool, argument", [
    ("project_management_search_tasks", "task_name"),
    ("company_directory_find_email_address", "name"),
    ("customer_relationship_manager_search_customers", "customer_name"),
    ("calendar_search_events", "query"),
])
def test_search_tools_answer_a_tool_error_in_bounded_time(tiny_world, monkeypatch, tool, argument):
    env = WorkplaceEnvironment(tiny_world)
    s = _slow_task_session(env)
    if tool != "project_management_search_tasks":  # the other tables hold no long run of a's
        monkeypatch.setattr(patterns, "MATCH_BUDGET_S", 0.0)
    started = time.monotonic()
    out = s.execute(tool, {argument: "(a|aa)+$"})
    took = time.monotonic() - started
    monkeypatch.undo()
    assert out.status == "error"
    assert "took longer than" in out.text and out.text.startswith(f'{{"output":"Error executing tool \'{tool}\'')
    assert took < MATCH_BUDGET_S + 1.0
    # normal patterns keep the reference's answers
    assert s.execute("project_management_search_tasks", {"task_name": "logo|cach"}).value[0]["task_name"] == "Design logo"
    assert s.execute("company_directory_find_email_address", {"name": "b.\\.kim"}).value == ["bo.kim@acme.com"]
