"""The verifier in both modes: reference examples, documented quirks, evidence, reward hacking."""

from __future__ import annotations

import json

import pytest

from officegym.core import Task, parse_tool_call
from officegym.core.types import ToolCall
from officegym.envs.workplace.verify import verify_calls


def C(tool: str, /, **args) -> ToolCall:
    return ToolCall(name=tool, arguments=args)


def both(world, pred, gt):
    return verify_calls(world, pred, gt, "outcome"), verify_calls(world, pred, gt, "nemo_gym")


# -- the reference's five example tasks -----------------------------------------------------------

@pytest.fixture(scope="module")
def examples(reference_dir):
    return [Task.from_row(json.loads(line)) for line in (reference_dir / "example.jsonl").read_text().splitlines()]


def test_every_ground_truth_replays_cleanly_and_verifies_against_itself(ref_world, examples):
    for task in examples:
        session = ref_world.new_session()
        results = session.replay(task.ground_truth)
        assert all(r.ok for r in results), [r.value for r in results]
        for mode in ("outcome", "nemo_gym"):
            v = verify_calls(ref_world, task.ground_truth, task.ground_truth, mode)
            assert v.reward == 1.0 and not v.side_effects and not v.invalid_calls


def test_empty_prediction_is_wrong_unless_ground_truth_is_empty(ref_world, examples):
    for task in examples:
        assert task.ground_truth
        o, n = both(ref_world, [], task.ground_truth)
        assert o.reward == n.reward == 0.0
        assert not o.side_effects  # doing nothing has no side effects
    o, n = both(ref_world, [], [])
    assert o.reward == n.reward == 1.0


# -- example_rollouts.jsonl: recorded rewards -----------------------------------------------------

def _rollout_ground_truths(world):
    """Ground truths for the five recorded rollouts, computed from the data (the file has none)."""
    crm = world.tables["crm"]
    # "haven't responded to a proposal for the consulting product in 3 weeks" -> last contact before now - 21 days
    stale = [r[0] for r in crm if r[7] == "Proposal" and r[6] == "Consulting" and r[5] < "2023-11-09"]
    casey = [r[0] for r in crm if r[2] == "Casey Wilson"]
    kofi = max((r for r in world.tables["emails"] if r[2].startswith("kofi")), key=lambda r: r[4])
    return {
        "Create a bar chart of total visits since November 30": [
            C("analytics_create_plot", time_min="2023-11-30", time_max="2023-11-30", value_to_plot="total_visits", plot_type="bar")
        ],
        "consulting": [
            C("customer_relationship_manager_update_customer", customer_id=i, field="status", new_value="Lost") for i in stale
        ],
        "Delete Casey Wilson from the crm": [C("customer_relationship_manager_delete_customer", customer_id=i) for i in casey],
        "Add Dakota Thomas as a new lead in the crm and assign them to Nadia": [
            C("customer_relationship_manager_add_customer", customer_name="Dakota Thomas",
              assigned_to_email="nadia.moreau@atlas.com", status="Lead")
        ],
        "Delete my last email from kofi": [C("email_delete_email", email_id=kofi[0])],
    }


def test_example_rollouts_get_their_recorded_rewards(ref_world, reference_dir):
    from officegym.core import function_calls_from_output

    gts = _rollout_ground_truths(ref_world)
    rows = [json.loads(line) for line in (reference_dir / "example_rollouts.jsonl").read_text().splitlines()]
    assert len(rows) == 5
    for row in rows:
        prompt = row["responses_create_params"]["input"][-1]["content"]
        gt = next(v for k, v in gts.items() if k in prompt)
        calls = function_calls_from_output(row["response"]["output"])
        nemo = verify_calls(ref_world, calls, gt, "nemo_gym")
        outcome = verify_calls(ref_world, calls, gt, "outcome")
        assert nemo.reward == row["reward"], prompt
        assert outcome.reward == row["reward"], prompt  # no quirk is involved in these five
    # the failed one: the model plotted up to 2024-06-30, which is a side effect with a precise diff
    bad = next(r for r in rows if r["reward"] == 0.0)
    v = verify_calls(ref_world, function_calls_from_output(bad["response"]["output"]), gts["Create a bar chart of total visits since November 30"])
    assert v.side_effects
    assert v.tables["plots"].extra == [{"file_path": "plots/2023-11-30_2024-06-30_total_visits_bar.png"}]
    assert v.tables["plots"].missing == [{"file_path": "plots/2023-11-30_2023-11-30_total_visits_bar.png"}]


# -- quirks: where the modes differ on purpose ----------------------------------------------------

SEND = C("email_send_email", recipient="a.b@atlas.com", subject="Hi", body="Hello")
DELETE = C("email_delete_email", email_id="00000057")


def test_row_labels_insert_delete_order(ref_world):
    o, n = both(ref_world, [SEND, DELETE], [DELETE, SEND])
    assert n.reward == 0.0  # the reference's row labels differ
    assert o.reward == 1.0 and o.modes_disagree
    assert o.other_mode == "nemo_gym" and o.other_mode_reward == 0.0
    assert "row labels" in o.tables["emails"].note
    # calendar inserts keep labels, so the two orders agree in both modes
    create = C("calendar_create_event", event_name="x", participant_email="a@b.c", event_start="2023-12-01 10:00:00", duration="30")
    delete = C("calendar_delete_event", event_id="00000013")
    assert [v.reward for v in both(ref_world, [create, delete], [delete, create])] == [1.0, 1.0]


def test_two_inserts_in_swapped_order(ref_world):
    p1 = C("analytics_create_plot", time_min="2023-11-01", time_max="2023-11-30", value_to_plot="total_visits", plot_type="bar")
    p2 = C("analytics_create_plot", time_min="2023-11-01", time_max="2023-11-30", value_to_plot="user_engaged", plot_type="line")
    o, n = both(ref_world, [p1, p2], [p2, p1])
    assert (o.reward, n.reward) == (1.0, 0.0)


def test_typed_duration_and_null_notes(ref_world):
    start = {"event_name": "x", "participant_email": "a@b.c", "event_start": "2023-12-01 10:00:00"}
    o, n = both(ref_world, [C("calendar_create_event", **start, duration=30)], [C("calendar_create_event", **start, duration="30")])
    assert (o.reward, n.reward) == (1.0, 0.0)
    # two different ints both become NaN in the reference, which then calls them equal
    o, n = both(ref_world, [C("calendar_create_event", **start, duration=30)], [C("calendar_create_event", **start, duration=45)])
    assert (o.reward, n.reward) == (0.0, 1.0)
    add = {"customer_name": "Dakota Thomas", "assigned_to_email": "nadia.moreau@atlas.com", "status": "Lead"}
    o, n = both(ref_world, [C("customer_relationship_manager_add_customer", **add)],
                [C("customer_relationship_manager_add_customer", **add, notes=None)])
    assert (o.reward, n.reward) == (1.0, 0.0)


def test_case_rules(ref_world):
    gt = [C("calendar_update_event", event_id="00000013", field="event_name", new_value="Risk Forum")]
    pred = [C("calendar_update_event", event_id="00000013", field="event_name", new_value="RISK FORUM")]
    assert [v.reward for v in both(ref_world, pred, gt)] == [1.0, 1.0]
    # status is case-sensitive in both modes (and the tool refuses "lost" anyway)
    add = {"customer_name": "Zed", "assigned_to_email": "nadia.moreau@atlas.com"}
    o, n = both(ref_world, [C("customer_relationship_manager_add_customer", **add, status="lead")],
                [C("customer_relationship_manager_add_customer", **add, status="Lead")])
    assert (o.reward, n.reward) == (0.0, 0.0)


def test_equivalent_forms(ref_world):
    orig = next(r for r in ref_world.tables["emails"] if r[0] == "00000057")
    fw = [C("email_forward_email", email_id="00000057", recipient="raj.patel@atlas.com")]
    send = [C("email_send_email", recipient="raj.patel@atlas.com", subject="FW: " + orig[3], body=orig[5])]
    assert [v.reward for v in both(ref_world, fw, send)] == [1.0, 1.0]
    d1, d2 = C("customer_relationship_manager_delete_customer", customer_id="00000001"), C("customer_relationship_manager_delete_customer", customer_id="00000002")
    assert [v.reward for v in both(ref_world, [d1, d2], [d2, d1])] == [1.0, 1.0]
    upd = C("project_management_update_task", task_id="00000149", field="list_name", new_value="Completed")
    revert = C("project_management_update_task", task_id="00000149", field="list_name", new_value="Backlog")
    assert [v.reward for v in both(ref_world, [upd, revert], [])] == [1.0, 1.0]
    # an event start written without seconds is the same instant (outcome only)
    a = {"event_name": "x", "participant_email": "a@b.c", "duration": "30"}
    o, n = both(ref_world, [C("calendar_create_event", **a, event_start="2023-12-01 10:00")],
                [C("calendar_create_event", **a, event_start="2023-12-01 10:00:00")])
    assert (o.reward, n.reward) == (1.0, 0.0)


def test_numbers_equal_their_strings_in_outcome(ref_world):
    gt = [C("customer_relationship_manager_update_customer", customer_id="00000001", field="customer_phone", new_value="5551234")]
    pred = [C("customer_relationship_manager_update_customer", customer_id="00000001", field="customer_phone", new_value=5551234)]
    o, n = both(ref_world, pred, gt)
    assert (o.reward, n.reward) == (1.0, 0.0)


def test_nemo_replay_keeps_nulls_outcome_drops_them(ref_world):
    # a null argument in a prediction: the live route dropped it, the reference's replay passes it on
    pred = [C("customer_relationship_manager_update_customer", customer_id="00000001", field="status", new_value="Won"),
            C("company_directory_find_email_address", name=None)]
    gt = [C("customer_relationship_manager_update_customer", customer_id="00000001", field="status", new_value="Won")]
    o, n = both(ref_world, pred, gt)
    assert (o.reward, n.reward) == (1.0, 1.0)
    # live semantics drop the null, so the tool refuses; the reference's replay crashes on None
    assert [c.error for c in o.invalid_calls] == ["Name not provided."]
    assert [c.error for c in n.invalid_calls] == [
        "Error executing tool 'company_directory_find_email_address': 'NoneType' object has no attribute 'lower'"
    ]


# -- evidence -------------------------------------------------------------------------------------

def test_evidence_lists_missing_extra_changed(ref_world):
    gt = [C("customer_relationship_manager_update_customer", customer_id="00000001", field="status", new_value="Won"),
          C("customer_relationship_manager_delete_customer", customer_id="00000002")]
    pred = [C("customer_relationship_manager_update_customer", customer_id="00000001", field="status", new_value="Lost"),
            C("customer_relationship_manager_delete_customer", customer_id="00000003"),
            C("email_delete_email", email_id="bogus")]
    v = verify_calls(ref_world, pred, gt)
    assert v.reward == 0.0 and v.side_effects
    crm = v.tables["crm"]
    assert [r["customer_id"] for r in crm.missing] == ["00000003"]
    assert [r["customer_id"] for r in crm.extra] == ["00000002"]
    assert crm.changed[0]["row"]["customer_id"] == "00000001"
    assert crm.changed[0]["fields"] == {"status": ["Won", "Lost"]}
    assert [(c.index, c.error) for c in v.invalid_calls] == [(2, "Email not found.")]
    d = v.to_dict()
    assert set(d) >= {"reward", "matched", "mode", "side_effects", "diff", "invalid_calls", "modes_disagree"}
    json.dumps(d)


def test_unknown_mode_rejected(ref_world):
    with pytest.raises(ValueError, match="unknown verification mode"):
        verify_calls(ref_world, [], [], "strict")


def test_bad_predicted_calls_are_harmless(ref_world):
    gt = [DELETE]
    junk = [
        parse_tool_call({"name": "email_delete_email", "arguments": "{not json"}),
        parse_tool_call({"name": "no_such_tool", "arguments": "{}"}),
        parse_tool_call({"name": "email_delete_email", "arguments": "[1]"}),
        parse_tool_call({"name": "email_delete_email", "arguments": '{"id": "00000057"}'}),
    ]
    for mode in ("outcome", "nemo_gym"):
        v = verify_calls(ref_world, [*junk, DELETE], gt, mode)
        assert v.reward == 1.0 and len(v.invalid_calls) == 4


# -- reward hacking probes: all must score 0 ------------------------------------------------------

def test_delete_everything_scores_zero(ref_world):
    gt = [DELETE]
    everything = [C("email_delete_email", email_id=r[0]) for r in ref_world.tables["emails"]]
    everything += [C("customer_relationship_manager_delete_customer", customer_id=r[0]) for r in ref_world.tables["crm"]]
    for mode in ("outcome", "nemo_gym"):
        v = verify_calls(ref_world, everything, gt, mode)
        assert v.reward == 0.0 and v.side_effects


def test_every_write_tool_scores_zero(ref_world):
    from officegym.envs.workplace.tools import WRITE_TOOLS

    spray = [
        C("email_send_email", recipient="a.b@atlas.com", subject="s", body="b"),
        DELETE,
        C("email_forward_email", email_id="00000001", recipient="a.b@atlas.com"),
        C("email_reply_email", email_id="00000002", body="ok"),
        C("calendar_create_event", event_name="x", participant_email="a@b.c", event_start="2023-12-01 10:00:00", duration="30"),
        C("calendar_delete_event", event_id="00000013"),
        C("calendar_update_event", event_id="00000014", field="duration", new_value="60"),
        C("analytics_create_plot", time_min="2023-11-01", time_max="2023-11-30", value_to_plot="total_visits", plot_type="bar"),
        C("project_management_create_task", task_name="t", assigned_to_email="leila.azizi@atlas.com", list_name="Backlog", due_date="2023-12-01", board="Design"),
        C("project_management_delete_task", task_id="00000001"),
        C("project_management_update_task", task_id="00000002", field="list_name", new_value="Completed"),
        C("customer_relationship_manager_update_customer", customer_id="00000001", field="status", new_value="Won"),
        C("customer_relationship_manager_add_customer", customer_name="x", assigned_to_email="raj.patel@atlas.com", status="Lead"),
        C("customer_relationship_manager_delete_customer", customer_id="00000005"),
    ]
    assert {c.name for c in spray} == WRITE_TOOLS
    for gt in ([DELETE], [], [spray[0]]):
        for mode in ("outcome", "nemo_gym"):
            assert verify_calls(ref_world, spray, gt, mode).reward == 0.0


def test_repeating_the_right_write_scores_zero(ref_world):
    send = [SEND]
    create = [C("calendar_create_event", event_name="x", participant_email="a@b.c", event_start="2023-12-01 10:00:00", duration="30")]
    for gt in (send, create):
        for mode in ("outcome", "nemo_gym"):
            v = verify_calls(ref_world, gt * 2, gt, mode)
            assert v.reward == 0.0 and v.side_effects
    # repeating an idempotent write is still the same outcome (and the reference agrees)
    upd = [C("customer_relationship_manager_update_customer", customer_id="00000001", field="status", new_value="Won")]
    assert [v.reward for v in both(ref_world, upd * 3, upd)] == [1.0, 1.0]
