"""Sessions: tools answer from the scenario, refusals and errors come back as text."""

from __future__ import annotations

import json

from officegym.envs.roles.base import RoleSession


def output(text):
    return json.loads(text)


def test_tools_answer_from_the_scenario(envs, task_sets):
    env = envs["roles/cto"]
    task = next(t for t in task_sets["roles/cto"] if t.metadata["difficulty"] >= 5)
    s = env.scenario(task)
    session = env.session(task)
    comps = output(session.call("list_components"))["output"]
    assert [c["component"] for c in comps] == [c["component"] for c in s.public["components"]]
    first = comps[0]["options"][0]
    sheet = output(session.call("get_option", {"option_id": first}))["output"]
    est = output(session.call("estimate_tco", {"selection": {comps[0]["component"]: first}}))["output"]
    assert est["tco_12m_usd"] == 12 * sheet["monthly_usd"] + sheet["migration_usd"]
    assert output(session.call("get_option", {"option_id": "x"}))["error"] == "unknown option 'x'"
    assert session.execute("get_option", {"option_id": "x"}).status == "rejected"
    assert session.execute("get_option", {}).status == "error"


def test_each_role_serves_its_lookups(envs, task_sets):
    for name, tasks in task_sets.items():
        env = envs[name]
        task = next(t for t in tasks if len(t.ground_truth) > 1)
        session = env.session(task)
        for call in task.ground_truth:
            result = session.execute(call.name, call.arguments)
            assert result.ok, (name, call, result.value)
        assert session.answer is not None
        assert session.execute(task.ground_truth[-1].name, task.ground_truth[-1].arguments).status == "rejected"


def test_risk_restricted_document_and_advisories_to_the_rule_book(envs):
    env = envs["roles/risk"]
    task = next(t for t in env.generate_tasks(300, 8, difficulty=(5, 8)) if t.metadata["infeasible"])
    s = env.scenario(task)
    session = env.session(task)
    assert "restricted" in output(session.call("read_document", {"doc_id": s.public["restricted"]}))["output"]
    open_task = next(t for t in env.generate_tasks(50, 8, difficulty=(6, 9))
                     if not t.metadata["infeasible"] and "dependencies" in env.scenario(t).public["artifacts"])
    scenario = env.scenario(open_task)
    session = env.session(open_task)
    row = scenario.public["artifacts"]["dependencies"][0]
    item = {"area": "dependencies", "item": row["package"], **{k: row[k] for k in ("version", "license", "scope",
                                                                                  "internet_facing")}}
    # an advisory fixed after the pinned version is a vulnerable dependency; one fixed in it is not
    later = {**item, "license": "MIT", "advisories": [{"fixed_in": row["version"] + ".1", "cvss": 9.1}]}
    out = output(session.call("assess_risks", {"items": [later]}))["output"]
    assert [e["risk_type"] for e in out["entries"]] == ["vulnerable_dependency"] and out["overall_score"] == 4 * out[
        "entries"][0]["impact"]
    fixed = {**later, "advisories": [{"fixed_in": row["version"], "cvss": 9.1}]}
    out = output(session.call("assess_risks", {"items": [fixed]}))["output"]
    assert out["entries"] == [] and "mitigated" in out["findings"][0]["finding"]


def test_a_session_without_a_task_explains_itself(envs):
    for env in envs.values():
        session = env.session(None)
        assert isinstance(session, RoleSession)
        assert "task" in output(session.call(env.tool_specs()[0].name, {}))["error"]
