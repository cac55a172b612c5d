from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from officegym.core.task import Task
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import InvalidCall, ToolCall, Verdict
from officegym.rewards import (
    BinaryOutcome,
    RewardResult,
    ShapedConfig,
    ShapedReward,
    UnknownRewardError,
    VerifierScore,
    WeightedSum,
    find_unnecessary_steps,
    make_reward,
    register_reward,
    reward_names,
)

# Workplace-like names; the rewards only learn which ones write from this set.
WRITES = frozenset({
    "email_reply_email", "email_delete_email", "calendar_create_event", "calendar_delete_event",
    "calendar_update_event", "crm_add_customer", "crm_update_customer",
})
SHAPED_COMPONENTS = {
    "correctness", "efficiency", "quality", "penalty", "unnecessary_steps", "failed_calls",
    "duplicate_calls", "reverted_writes", "unused_reads", "steps", "optimal_steps",
}


def ex(tool: str, output, status: str = "ok", /, **arguments) -> ToolExecution:
    """A tool execution; positional-only so that tools may take `name=` and `status=` arguments."""
    return ToolExecution(ToolCall(tool, arguments), json.dumps({"output": output}), status)


def turn(*executions: ToolExecution, text: str = "", invalid: list[str] | None = None) -> Turn:
    return Turn(text=text, executions=list(executions), invalid=list(invalid or []))


def trajectory(*turns: Turn) -> Trajectory:
    return Trajectory(task_id=0, turns=list(turns))


def task(*ground_truth: tuple[str, dict], **metadata) -> Task:
    calls = [ToolCall(name, args) for name, args in ground_truth]
    return Task(id=0, input=[{"role": "user", "content": "do it"}], ground_truth=calls, metadata=metadata)


def verdict(matched: bool) -> Verdict:
    return Verdict(reward=float(matched), matched=matched, mode="outcome")


REPLY = ("email_reply_email", {"email_id": "00000259", "body": "Thanks"})
SEARCH_HIT = {"emails": [{"email_id": "00000259", "sender/recipient": "kofi.mensah@atlas.com", "subject": "Task Update"}]}


def minimal_reply() -> Trajectory:
    return trajectory(
        turn(ex("email_search_emails", SEARCH_HIT, query="kofi")),
        turn(ex("email_reply_email", "Email replied successfully.", email_id="00000259", body="Thanks")),
        turn(text="Done."),
    )


def shaped(**options) -> ShapedReward:
    return ShapedReward(writes=WRITES, **options)


# ---- the interface and the binary outcome ------------------------------------------------------


def test_binary_outcome():
    r = BinaryOutcome()
    assert r(task(REPLY), minimal_reply(), verdict(True)) == RewardResult(1.0, {"outcome": 1.0})
    assert r(task(REPLY), minimal_reply(), verdict(False)) == RewardResult(0.0, {"outcome": 0.0})
    assert r.max_total == 1.0 and r.name == "binary"


# ---- shaped: gating, the perfect case, components ----------------------------------------------


def test_correct_minimal_trajectory_gets_one_plus_bonuses():
    result = shaped()(task(REPLY), minimal_reply(), verdict(True))
    assert result.total == pytest.approx(1.0 + 0.3 + 0.1)
    assert set(result.components) == SHAPED_COMPONENTS
    c = result.components
    assert (c["correctness"], c["efficiency"], c["quality"], c["penalty"]) == (1.0, 1.0, 1.0, 0.0)
    assert (c["steps"], c["optimal_steps"], c["unnecessary_steps"]) == (1.0, 1.0, 0.0)
    assert all(isinstance(v, float) for v in c.values())


@pytest.mark.parametrize("messy", [False, True])
def test_wrong_answer_gets_zero_whatever_the_process(messy):
    traj = minimal_reply()
    if messy:
        traj.turns.insert(0, turn(ex("email_delete_email", "Email not found.", "rejected", email_id="1"), invalid=["<bad"]))
    result = shaped()(task(REPLY), traj, verdict(False))
    assert result.total == 0.0
    assert set(result.components) == SHAPED_COMPONENTS  # still reported, for the logs
    assert result.components["correctness"] == 0.0
    if messy:
        assert result.components["failed_calls"] == 2.0 and result.components["penalty"] == pytest.approx(0.2)
    else:
        assert result.components["efficiency"] == 1.0


def test_default_weights_and_the_quality_weight_choice():
    c = ShapedConfig()
    assert (c.efficiency_weight, c.quality_weight, c.step_penalty, c.penalty_cap) == (0.3, 0.1, 0.1, 0.2)
    assert c.max_total == pytest.approx(1.4)
    assert shaped().max_total == pytest.approx(1.4)
    assert shaped(quality_weight=0.2).max_total == pytest.approx(1.5)  # the design doc's original weight


def test_normalized_total_is_in_unit_interval():
    r = shaped(normalize=True)
    assert r.max_total == 1.0
    assert r(task(REPLY), minimal_reply(), verdict(True)).total == pytest.approx(1.0)


# ---- efficiency ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("optimal", "steps", "expected"), [(1, 1, 1.0), (1, 2, 0.5), (2, 3, 2 / 3), (3, 1, 1.0), (2, 4, 0.5)])
def test_efficiency_is_min_one_optimal_over_steps(optimal, steps, expected):
    gt = [("crm_update_customer", {"customer_id": str(k), "field": "status", "new_value": "Won"}) for k in range(optimal)]
    calls = [ex("crm_update_customer", "Customer updated successfully.", customer_id=f"c{k}", field="status", new_value="Won")
             for k in range(steps)]
    result = shaped(step_penalty=0.0)(task(*gt), trajectory(turn(*calls)), verdict(True))
    assert result.components["efficiency"] == pytest.approx(expected)
    assert result.total == pytest.approx(1.0 + 0.3 * expected + 0.1)


def test_reads_are_free_for_efficiency_when_the_ground_truth_is_all_writes():
    # three reads before the one write: still efficiency 1 (writes mode); reads policed by taint
    traj = trajectory(
        turn(ex("company_directory_find_email_address", ["nadia.moreau@atlas.com"], name="Nadia")),
        turn(ex("email_search_emails", SEARCH_HIT, query="kofi")),
        turn(ex("email_reply_email", "Email replied successfully.", email_id="00000259", body="nadia.moreau@atlas.com")),
    )
    result = shaped()(task(REPLY), traj, verdict(True))
    assert result.components["steps"] == 1.0 and result.components["efficiency"] == 1.0


def test_without_write_tools_every_call_is_a_step():
    result = ShapedReward()(task(REPLY), minimal_reply(), verdict(True))
    assert result.components["steps"] == 2.0
    assert result.components["efficiency"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="needs the write tools"):
        ShapedReward(steps="writes")


def test_recorded_optimal_plan_counts_all_calls():
    result = shaped()(task(REPLY, optimal_steps=2), minimal_reply(), verdict(True))
    assert (result.components["optimal_steps"], result.components["steps"]) == (2.0, 2.0)
    assert result.components["efficiency"] == 1.0


def test_steps_mode_calls_is_honoured():
    result = shaped(steps="calls")(task(REPLY), minimal_reply(), verdict(True))
    assert result.components["efficiency"] == pytest.approx(0.5)


# ---- empty ground truth -------------------------------------------------------------------------


def test_empty_ground_truth_full_bonus_when_only_looking():
    traj = trajectory(
        turn(ex("crm_search_customers", "No customers found.", status="Proposal")),
        turn(text="There are no such customers, nothing to do."),
    )
    result = shaped()(task(), traj, verdict(True))
    c = result.components
    assert (c["optimal_steps"], c["steps"], c["efficiency"], c["unused_reads"]) == (0.0, 0.0, 1.0, 0.0)
    assert result.total == pytest.approx(1.4)


def test_empty_ground_truth_no_efficiency_after_a_write():
    traj = trajectory(turn(ex("calendar_update_event", "Event updated successfully.", event_id="1", field="duration", new_value="30")))
    result = shaped()(task(), traj, verdict(True))
    assert result.components["efficiency"] == 0.0
    assert result.total == pytest.approx(1.0 + 0.1)


def test_empty_ground_truth_in_calls_mode():
    assert ShapedReward()(task(), trajectory(turn(text="nothing to do")), verdict(True)).components["efficiency"] == 1.0
    traj = trajectory(turn(ex("crm_search_customers", "No customers found.", status="Won")))
    assert ShapedReward()(task(), traj, verdict(True)).components["efficiency"] == 0.0


# ---- unnecessary steps ----------------------------------------------------------------------------


def reasons(traj: Trajectory, writes=WRITES) -> list[str]:
    return [s.reason for s in find_unnecessary_steps(traj, None if writes is None else writes.__contains__)]


def test_duplicate_call_is_penalised_once():
    traj = minimal_reply()
    traj.turns.insert(2, turn(ex("email_reply_email", "Email replied successfully.", email_id="00000259", body="Thanks")))
    result = shaped()(task(REPLY), traj, verdict(True))
    c = result.components
    assert (c["duplicate_calls"], c["unnecessary_steps"], c["penalty"]) == (1.0, 1.0, pytest.approx(0.1))
    assert c["efficiency"] == pytest.approx(0.5)
    assert result.total == pytest.approx(1.0 + 0.3 * 0.5 + 0.1 - 0.1)


def test_argument_order_does_not_hide_a_duplicate_but_a_retry_after_failure_is_not_one():
    a = ToolExecution(ToolCall("crm_search_customers", {"a": 1, "b": 2}), '{"output": "No customers found."}')
    b = ToolExecution(ToolCall("crm_search_customers", {"b": 2, "a": 1}), '{"output": "No customers found."}')
    assert reasons(trajectory(turn(a), turn(b))) == ["duplicate"]
    failed = ex("calendar_delete_event", "Event not found.", "rejected", event_id="00000001")
    retry = ex("calendar_delete_event", "Event deleted successfully.", event_id="00000001")
    assert reasons(trajectory(turn(failed), turn(retry))) == ["failed"]


def test_failed_calls_and_fragments_are_penalised_and_lower_quality():
    traj = minimal_reply()
    traj.turns.insert(0, turn(ex("email_search_emails", "Error executing tool", "error", bogus=1), invalid=["{not json"]))
    result = shaped()(task(REPLY), traj, verdict(True))
    c = result.components
    assert c["failed_calls"] == 2.0 and c["penalty"] == pytest.approx(0.2)
    assert c["quality"] == pytest.approx(2 / 4)
    assert result.total == pytest.approx(1.0 + 0.3 + 0.1 * 0.5 - 0.2)


def test_verdict_invalid_calls_are_not_counted_twice():
    v = verdict(True)
    v.invalid_calls = [InvalidCall(0, "email_search_emails", "boom")]
    result = shaped()(task(REPLY), minimal_reply(), v)
    assert result.components["failed_calls"] == 0.0  # the statuses are the evidence


def test_unused_read_is_penalised():
    traj = trajectory(
        turn(ex("calendar_search_events", {"events": [{"event_id": "00000007", "event_name": "Offsite"}]}, query="offsite")),
        turn(ex("email_search_emails", SEARCH_HIT, query="kofi")),
        turn(ex("email_reply_email", "Email replied successfully.", email_id="00000259", body="Thanks")),
    )
    result = shaped()(task(REPLY), traj, verdict(True))
    assert result.components["unused_reads"] == 1.0
    assert [s.name for s in find_unnecessary_steps(traj, WRITES.__contains__)] == ["calendar_search_events"]
    assert result.total == pytest.approx(1.4 - 0.1)


def test_read_used_only_by_a_call_of_the_same_turn_is_unused():
    traj = trajectory(turn(
        ex("email_search_emails", SEARCH_HIT, query="kofi"),
        ex("email_reply_email", "Email replied successfully.", email_id="00000259", body="Thanks"),
    ))
    assert reasons(traj) == ["unused_read"]


def test_read_used_in_later_text_case_insensitively_or_as_a_substring():
    hit = ex("company_directory_find_email_address", ["Nadia.Moreau@atlas.com"], name="nadia")
    assert reasons(trajectory(turn(hit), turn(text="Her address is nadia.moreau@atlas.com."))) == []
    add = ex("crm_add_customer", "00000200", customer_name="D", assigned_to_email="nadia.moreau@atlas.com")
    assert reasons(trajectory(turn(hit), turn(add))) == []
    body = ex("email_reply_email", "ok", email_id="1", body="cc nadia.moreau@atlas.com please")
    assert reasons(trajectory(turn(hit), turn(body))) == []


def test_short_values_match_whole_words_only():
    count = ex("analytics_total_visits_count", {"2023-11-30": 42}, time_min="2023-11-30")
    assert reasons(trajectory(turn(count), turn(text="There were 42 visits."))) == []
    assert reasons(trajectory(turn(count), turn(text="There were 1420 visits."))) == ["unused_read"]


def test_reads_that_carry_no_values_or_only_echo_are_not_flagged():
    message = ex("crm_search_customers", "No customers found.", status="Won")
    assert reasons(trajectory(turn(message), turn(text="none"))) == []
    echo = ex("company_directory_find_email_address", ["bo"], name="bo")
    assert reasons(trajectory(turn(echo), turn(ex("email_reply_email", "ok", email_id="1", body="bo")))) == []


def test_reads_are_not_judged_without_the_write_tools():
    traj = trajectory(turn(ex("calendar_search_events", {"events": [{"event_id": "00000007"}]}, query="x")), turn(text="ok"))
    assert reasons(traj, writes=None) == []
    assert reasons(traj) == ["unused_read"]


def test_overwritten_update_is_a_reverted_write():
    first = ex("calendar_update_event", "Event updated successfully.", event_id="00000001", field="duration", new_value="30")
    other_field = ex("calendar_update_event", "Event updated successfully.", event_id="00000001", field="event_name", new_value="x")
    second = ex("calendar_update_event", "Event updated successfully.", event_id="00000001", field="duration", new_value="60")
    steps = find_unnecessary_steps(trajectory(turn(first), turn(other_field), turn(second)), WRITES.__contains__)
    assert [(s.index, s.reason) for s in steps] == [(0, "reverted")]


def test_create_then_delete_reverts_both_and_the_writes_between():
    create = ex("calendar_create_event", "00000042", event_name="Sync", participant_email="a@b.c",
                event_start="2023-12-01 10:00:00", duration="30")
    update = ex("calendar_update_event", "Event updated successfully.", event_id="00000042", field="duration", new_value="60")
    delete = ex("calendar_delete_event", "Event deleted successfully.", event_id="00000042")
    unrelated = ex("calendar_delete_event", "Event deleted successfully.", event_id="00000007")
    traj = trajectory(turn(create), turn(update), turn(unrelated), turn(delete))
    steps = find_unnecessary_steps(traj, WRITES.__contains__)
    assert [(s.index, s.reason) for s in steps] == [(0, "reverted"), (1, "reverted"), (3, "reverted")]
    # a create that stays is not reverted
    assert find_unnecessary_steps(trajectory(turn(create), turn(update)), WRITES.__contains__) == []


def test_penalty_is_capped():
    waste = [turn(ex("calendar_delete_event", "Event not found.", "rejected", event_id=str(k))) for k in range(5)]
    traj = minimal_reply()
    traj.turns[:0] = waste
    result = shaped()(task(REPLY), traj, verdict(True))
    c = result.components
    assert c["unnecessary_steps"] == 5.0 and c["penalty"] == pytest.approx(0.2)
    assert result.total == pytest.approx(1.0 + 0.3 * (1 / 6) + 0.1 * (2 / 7) - 0.2)


def test_each_call_counts_once_with_failure_first():
    fail = ex("calendar_delete_event", "Event not found.", "rejected", event_id="9")
    assert reasons(trajectory(turn(fail), turn(fail))) == ["failed", "failed"]


def test_total_is_clamped_at_zero():
    r = shaped(efficiency_weight=0.0, quality_weight=0.0, step_penalty=1.0, penalty_cap=5.0)
    traj = trajectory(*[turn(ex("calendar_delete_event", "no", "rejected", event_id=str(k))) for k in range(3)])
    result = r(task(), traj, verdict(True))
    assert result.components["penalty"] == 3.0 and result.total == 0.0


@pytest.mark.parametrize("bad", [{"quality_weight": -0.1}, {"penalty_cap": math.inf}, {"steps": "turns"}])
def test_config_validation(bad):
    with pytest.raises(ValueError):
        ShapedConfig(**bad)


def test_with_the_workplace_write_tools():
    from officegym.envs.workplace.tools import WRITE_TOOLS

    traj = trajectory(
        turn(ex("company_directory_find_email_address", ["nadia.moreau@atlas.com"], name="Nadia")),
        turn(ex("customer_relationship_manager_add_customer", "00000200", customer_name="Dakota Thomas",
                assigned_to_email="nadia.moreau@atlas.com", status="Lead")),
        turn(text="Added."),
    )
    gt = ("customer_relationship_manager_add_customer",
          {"customer_name": "Dakota Thomas", "assigned_to_email": "nadia.moreau@atlas.com", "status": "Lead"})
    result = make_reward("shaped", writes=WRITE_TOOLS)(task(gt), traj, verdict(True))
    assert result.total == pytest.approx(1.4)
    assert result.components["steps"] == 1.0


# ---- weighted sums and the registry ---------------------------------------------------------------


def test_weighted_sum_totals_and_prefixed_components():
    combo = WeightedSum([(0.5, shaped()), (0.5, BinaryOutcome())])
    result = combo(task(REPLY), minimal_reply(), verdict(True))
    assert result.total == pytest.approx(0.5 * 1.4 + 0.5 * 1.0)
    assert result.components["shaped/total"] == pytest.approx(1.4)
    assert result.components["binary/outcome"] == 1.0
    assert {f"shaped/{k}" for k in SHAPED_COMPONENTS} <= set(result.components)
    assert combo.max_total == pytest.approx(0.5 * 1.4 + 0.5)
    assert combo(task(REPLY), minimal_reply(), verdict(False)).total == 0.0


def test_weighted_sum_names_repeats_and_rejects_bad_weights():
    combo = WeightedSum([(1.0, BinaryOutcome()), (2.0, BinaryOutcome())])
    result = combo(task(REPLY), minimal_reply(), verdict(True))
    assert result.total == 3.0 and {"binary/outcome", "binary_2/outcome"} <= set(result.components)
    for bad in (-1.0, math.nan, True):
        with pytest.raises(ValueError, match="weights"):
            WeightedSum([(bad, BinaryOutcome())])
    with pytest.raises(ValueError):
        WeightedSum([])


def test_make_reward_from_names_mappings_and_strings():
    assert isinstance(make_reward("binary"), BinaryOutcome)
    assert isinstance(make_reward("outcome"), VerifierScore)
    r = make_reward("shaped", writes=WRITES, quality_weight=0.05, normalize=True)
    assert isinstance(r, ShapedReward) and r.config.quality_weight == 0.05 and r.max_total == 1.0
    combo = make_reward({"shaped": 0.5, "binary": 0.5}, writes=WRITES)
    assert isinstance(combo, WeightedSum) and [(n, w) for n, w, _ in combo.parts] == [("shaped", 0.5), ("binary", 0.5)]
    nested = make_reward({"shaped": {"weight": 2, "efficiency_weight": 0.2, "value_keys": ["new_value"]}})
    assert nested.parts[0][1] == 2.0 and nested.parts[0][2].config.efficiency_weight == 0.2
    from_text = make_reward("shaped:0.25, binary:0.75", writes=WRITES)
    assert [(n, w) for n, w, _ in from_text.parts] == [("shaped", 0.25), ("binary", 0.75)]
    assert from_text(task(REPLY), minimal_reply(), verdict(True)).total == pytest.approx(0.25 * 1.4 + 0.75)
    assert make_reward(r) is r
    assert {"binary", "shaped"} <= set(reward_names())


def test_make_reward_errors_are_clear():
    with pytest.raises(UnknownRewardError, match=r"unknown reward 'nope'; known: .*binary.*shaped"):
        make_reward("nope")
    with pytest.raises(KeyError):
        make_reward({"binary": 1, "nope": 1})
    with pytest.raises(ValueError, match=r"unknown option.*colour.*for reward 'shaped'"):
        make_reward("shaped", colour="red")
    with pytest.raises(ValueError, match="takes no options"):
        make_reward("binary", normalize=True)
    with pytest.raises(ValueError, match="name:number"):
        make_reward("shaped:lots")
    with pytest.raises(TypeError):
        make_reward(42)


def test_register_reward():
    class Constant:
        name = "constant"
        max_total = 0.5

        def __call__(self, task, trajectory, verdict):
            return RewardResult(0.5, {"value": 0.5})

    register_reward("constant_test", lambda writes=None, **kw: Constant())
    combo = make_reward({"constant_test": 1.0, "binary": 1.0})
    assert combo(task(REPLY), minimal_reply(), verdict(True)).components["constant/value"] == 0.5


# ---- properties -----------------------------------------------------------------------------------

NAMES = ["email_search_emails", "email_reply_email", "calendar_update_event", "calendar_create_event",
         "calendar_delete_event", "crm_search_customers"]
IDS = ["00000001", "00000002", "00000042"]
OUTPUTS = st.sampled_from(["No customers found.", "Done.", "00000042", "00000001"]) | st.builds(
    lambda i, n: {"items": [{"id": i, "name": n}]}, st.sampled_from(IDS), st.sampled_from(["Ana", "Bo", "x"])
)
EXECUTIONS = st.builds(
    lambda name, i, field, value, output, status: ToolExecution(
        ToolCall(name, {"event_id": i, "field": field, "new_value": value}), json.dumps({"output": output}), status
    ),
    st.sampled_from(NAMES), st.sampled_from(IDS), st.sampled_from(["duration", "event_name"]),
    st.sampled_from(["30", "60", "Ana"]), OUTPUTS, st.sampled_from(["ok", "ok", "ok", "rejected", "error", "invalid"]),
)
TURNS = st.builds(
    Turn,
    text=st.sampled_from(["", "ok", "id 00000001", "Ana"]),
    executions=st.lists(EXECUTIONS, max_size=3),
    invalid=st.lists(st.just("<bad"), max_size=1),
)
CONFIGS = st.builds(
    ShapedConfig,
    efficiency_weight=st.floats(0, 1), quality_weight=st.floats(0, 0.5), step_penalty=st.floats(0, 2),
    penalty_cap=st.floats(0, 3), normalize=st.booleans(), steps=st.sampled_from(["auto", "calls", "writes"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(TURNS, max_size=5),
    gt_size=st.integers(0, 3),
    matched=st.booleans(),
    config=CONFIGS,
    recorded=st.none() | st.integers(0, 4),
)
def test_shaped_total_is_bounded_and_gated(turns, gt_size, matched, config, recorded):
    gt = [("calendar_update_event", {"event_id": "00000001", "field": "duration", "new_value": "30"})] * gt_size
    t = task(*gt) if recorded is None else task(*gt, optimal_steps=recorded)
    reward = ShapedReward(config, writes=WRITES)
    result = reward(t, trajectory(*turns), verdict(matched))
    assert 0.0 <= result.total <= reward.max_total + 1e-9
    if not matched:
        assert result.total == 0.0
    assert set(result.components) == SHAPED_COMPONENTS
    c = result.components
    assert all(math.isfinite(v) for v in c.values())
    assert 0.0 <= c["efficiency"] <= 1.0 and 0.0 <= c["quality"] <= 1.0
    assert 0.0 <= c["penalty"] <= config.penalty_cap
    assert c["unnecessary_steps"] == c["failed_calls"] + c["duplicate_calls"] + c["reverted_writes"] + c["unused_reads"]
    # every attempted call is classified at most once
    attempted = sum(len(tn.executions) + len(tn.invalid) for tn in turns)
    assert c["unnecessary_steps"] <= attempted


@settings(max_examples=100, deadline=None)
@given(turns=st.lists(TURNS, max_size=4), matched=st.booleans(), w=st.floats(0, 3), v=st.floats(0, 3))
def test_weighted_sum_is_bounded(turns, matched, w, v):
    combo = make_reward({"shaped": w, "binary": v}, writes=WRITES)
    result = combo(task(REPLY), trajectory(*turns), verdict(matched))
    assert 0.0 <= result.total <= combo.max_total + 1e-9
    if not matched:
        assert result.total == 0.0
