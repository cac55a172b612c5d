"""The variance curriculum draws templates whose groups teach something (rewards that vary) more often
than solved or hopeless ones, follows each template's evidence as it changes, and resumes exactly."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from officegym.train.curriculum import VarianceCurriculum
from officegym.train.data import DataError


def _tasks():
    return [SimpleNamespace(id=f"{t}-{i}", metadata={"template": t}) for t in ("easy", "half", "hard") for i in range(10)]


def test_draws_follow_the_share_of_groups_with_signal():
    cur = VarianceCurriculum(_tasks(), seed=0, floor=0.02, decay=1.0)
    first = Counter(t.metadata["template"] for t in cur.take(300))
    assert min(first.values()) > 60  # no evidence yet: every template about equally
    for _ in range(10):
        cur.observe(SimpleNamespace(metadata={"template": "easy"}), [1.0] * 8)
        cur.observe(SimpleNamespace(metadata={"template": "half"}), [1.0] * 4 + [0.0] * 4)
        cur.observe(SimpleNamespace(metadata={"template": "hard"}), [0.0] * 8)
    assert cur.pass_rate("half") == pytest.approx(0.5) and cur.pass_rate("easy") > 0.97
    later = Counter(t.metadata["template"] for t in cur.take(600))
    assert later["half"] > 0.8 * 600 and later["easy"] > 0 and later["hard"] > 0  # the floor keeps them in play
    metrics = cur.metrics()
    draws = {k: v for k, v in metrics.items() if k.startswith("curriculum/p_draw/")}
    assert sum(draws.values()) == pytest.approx(1.0) and metrics["curriculum/p_draw/half"] > 0.8
    assert metrics["curriculum/pass_rate/easy"] == cur.pass_rate("easy") > 0.97  # the evidence behind the draws
    assert metrics["curriculum/signal_rate/half"] == cur.signal_rate("half") > 0.9 > metrics["curriculum/signal_rate/hard"]


def test_a_template_of_solved_and_hopeless_tasks_is_not_favoured():
    # 'split': half its tasks always pass, half never (pass rate 1/2, yet no group varies);
    # 'mixed': a lower pass rate, but its groups vary
    cur = VarianceCurriculum(_tasks(), seed=0, floor=0.02, decay=1.0)
    for i in range(10):
        cur.observe(SimpleNamespace(metadata={"template": "easy"}), [float(i % 2)] * 8)
        cur.observe(SimpleNamespace(metadata={"template": "half"}), [1.0] * 2 + [0.0] * 6)
    assert cur.pass_rate("easy") == pytest.approx(0.5) and cur.pass_rate("half") < 0.3
    drawn = Counter(t.metadata["template"] for t in cur.take(600))
    assert drawn["half"] > 5 * drawn["easy"]


def test_old_evidence_decays_with_the_templates_own_groups():
    cur = VarianceCurriculum(_tasks(), seed=0, decay=0.5)
    for _ in range(3):
        cur.observe(SimpleNamespace(metadata={"template": "hard"}), [0.0] * 8)
    hard = cur.signal_rate("hard")
    for _ in range(10):  # other templates' groups do not bring a hopeless one back to the prior
        cur.observe(SimpleNamespace(metadata={"template": "half"}), [0.0, 1.0])
    assert cur.signal_rate("hard") == pytest.approx(hard) and hard < 0.3
    for _ in range(10):  # its own new evidence replaces the old: the policy learned it
        cur.observe(SimpleNamespace(metadata={"template": "hard"}), [0.0, 1.0])
    assert cur.seen["hard"] < 4.01 and cur.signal_rate("hard") > 0.6


def test_old_checkpoints_without_signal_counts_resume_from_the_prior():
    cur = VarianceCurriculum(_tasks(), seed=1)
    cur.observe(SimpleNamespace(metadata={"template": "half"}), [0.0, 1.0])
    state = cur.state_dict()
    del state["mixed"], state["groups"]
    again = VarianceCurriculum(_tasks(), seed=1)
    again.load_state_dict(state)
    assert again.signal_rate("half") == 0.5 and again.seen["half"] == cur.seen["half"]


def test_within_a_template_tasks_cycle_and_resume_is_exact():
    cur = VarianceCurriculum(_tasks(), seed=4)
    drawn = cur.take(200)
    per = Counter(t.id for t in drawn if t.metadata["template"] == "half")
    assert max(per.values()) - min(per.values()) <= 1  # every task of a template before any repeats
    cur.observe(drawn[0], [1.0, 0.0])
    state = cur.state_dict()
    import json

    state = json.loads(json.dumps(state))  # survives a checkpoint's JSON
    again = VarianceCurriculum(_tasks(), seed=4)
    again.load_state_dict(state)
    assert [t.id for t in again.take(50)] == [t.id for t in cur.take(50)]
    with pytest.raises(DataError, match="does not fit"):
        VarianceCurriculum(_tasks()[:5], seed=4).load_state_dict(state)
