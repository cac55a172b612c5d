"""Every route of the review app through TestClient (no browser)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("jinja2")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from officegym.review.app import REVIEWER_COOKIE, create_app
from officegym.review.export import EXPORT_FILES

BAD_CALLS = json.dumps([{"name": "email_reply_email", "arguments": {"email_id": "99999999", "body": "OK"}}])
GOOD_CALLS = json.dumps([{"name": "email_reply_email", "arguments": {"email_id": "00000039", "body": "OK"}}])


@pytest.fixture
def client(flagged):
    store, envs, ids = flagged
    with TestClient(create_app(store, envs, reviewer="ann")) as c:
        yield c, store, ids


def test_queue_filters_and_counts(client):
    c, _store, _ids = client
    assert c.get("/", follow_redirects=False).headers["location"] == "/queue"
    page = c.get("/queue")
    assert page.status_code == 200
    assert 'data-count="pending">4<' in page.text and "4 matching" in page.text
    assert page.text.index("broken") < page.text.index("move")  # priority order
    only = c.get("/queue", params={"reason": "distinct_rewarded_states"})
    assert "2 matching" in only.text and "broken" not in only.text.split('id="queue"')[1]
    cat = c.get("/queue", params={"category": "workplace_assistant_project_management"})
    assert "1 matching" in cat.text
    done = c.get("/queue", params={"status": "accepted"})
    assert "0 matching" in done.text and "Nothing here." in done.text
    assert c.get("/queue", params={"page": "x"}).status_code == 200


def test_item_page_shows_task_trajectory_diff_reward_and_group(client):
    c, _store, ids = client
    page = c.get(f"/items/{ids[('reply', 1)]}")
    assert page.status_code == 200
    t = page.text
    assert "Reply &#39;Thanks&#39; to Wiremu" in t  # the task, escaped
    assert 'id="ground-truth"' in t and "email_reply_email" in t
    assert "turn 1" in t and "Email replied successfully." in t  # the tool output
    assert "distinct_rewarded_states" in t and "2/3 samples pass" in t
    assert f'href="/items/{ids[("reply", 0)]}"' in t  # the sibling in the queue
    blind = c.get(f"/items/{ids[('reply', 1)]}", params={"blind": "1"})
    assert 'id="ground-truth"' not in blind.text and "blind mode" in blind.text
    broken = c.get(f"/items/{ids[('broken', 0)]}").text
    # The state diff: the ground truth's reply fails, so the sample's reply is an unexpected row.
    diff = broken.split('id="diff"')[1].split("</div>")[0]
    assert "<h4>emails</h4>" in diff and "unexpected" in diff and "RE: Cyrus Ito: hardware interest" in diff
    assert "expected, missing" not in diff
    assert "oracle_fails" in broken and "Email not found." in broken
    assert c.get("/items/999").status_code == 404
    assert c.get("/items/abc").status_code == 422


def test_accept_reject_skip_note_redirect_to_the_next_pending(client):
    c, store, ids = client
    r = c.post(f"/items/{ids[('broken', 0)]}/accept", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/items/{ids[('reply', 0)]}?done=accept"
    assert REVIEWER_COOKIE in r.headers.get("set-cookie", "")
    assert store.get(ids[("broken", 0)])["status"] == "accepted"
    r = c.post(f"/items/{ids[('reply', 0)]}/reject", data={"reason": ""}, follow_redirects=False)
    assert r.status_code == 400 and "needs a reason" in r.text
    r = c.post(f"/items/{ids[('reply', 0)]}/reject", data={"reason": "verifier_too_lenient", "note": "case",
                                                           "f_reason": "distinct_rewarded_states"}, follow_redirects=False)
    assert r.headers["location"] == f"/items/{ids[('reply', 1)]}?reason=distinct_rewarded_states&done=reject"
    r = c.post(f"/items/{ids[('reply', 1)]}/skip", data={"reviewer": "bo"}, follow_redirects=False)
    assert r.status_code == 303 and store.decisions(ids[("reply", 1)])[0]["reviewer"] == "bo"
    r = c.post(f"/items/{ids[('reply', 1)]}/note", data={"note": "look again"}, follow_redirects=False)
    assert r.headers["location"] == f"/items/{ids[('reply', 1)]}?done=note"
    assert store.get(ids[("reply", 1)])["status"] == "skipped"
    assert c.post(f"/items/{ids[('move', 0)]}/launch", follow_redirects=False).status_code == 404
    assert c.post("/items/999/accept", follow_redirects=False).status_code == 404
    page = c.get(f"/items/{ids[('reply', 0)]}?done=reject").text
    assert "Rejected." in page and "verifier_too_lenient" in page and "case" in page


def test_correction_is_replayed_and_reverified_before_saving(client):
    c, store, ids = client
    item = ids[("broken", 0)]
    refused = c.post(f"/items/{item}/correct", data={"calls": BAD_CALLS, "mode": "save"})
    assert refused.status_code == 422 and "Correction refused" in refused.text and "Email not found." in refused.text
    assert store.get(item)["status"] == "pending" and store.decisions(item) == []
    assert "99999999" in refused.text.split('id="calls"')[1]  # the reviewer's text is kept for editing
    not_json = c.post(f"/items/{item}/correct", data={"calls": "[{oops", "mode": "save"})
    assert not_json.status_code == 422 and "not valid JSON" in not_json.text
    unknown = c.post(f"/items/{item}/correct", data={"calls": '[{"name": "nope", "arguments": {}}]'})
    assert unknown.status_code == 422 and "Error executing tool" in unknown.text
    checked = c.post(f"/items/{item}/correct", data={"calls": GOOD_CALLS, "mode": "check"})
    assert checked.status_code == 200 and 'id="check"' in checked.text and "replay cleanly" in checked.text
    assert store.decisions(item) == []  # checking saves nothing
    saved = c.post(f"/items/{item}/correct", data={"calls": GOOD_CALLS, "mode": "save", "note": "id fixed"},
                   follow_redirects=False)
    assert saved.status_code == 303 and saved.headers["location"] == f"/items/{item}?done=correct"
    d = store.decisions(item)[-1]
    assert d["action"] == "correct" and d["payload"]["calls"] == [
        {"name": "email_reply_email", "arguments": '{"email_id": "00000039", "body": "OK"}'}]
    assert d["payload"]["rescored"]["matched"] is True  # the rollout did exactly this
    assert d["payload"]["previous_ground_truth"][0]["arguments"] == '{"email_id": "99999999", "body": "OK"}'
    page = c.get(f"/items/{item}").text
    assert "00000039" in page.split('id="calls"')[1].split("</textarea>")[0]  # the form shows the correction
    actions = [e["action"] for e in store.audit(item_id=item)]
    assert actions == ["correct", "correct_refused", "correct_refused", "correct_refused"]


def test_reviewer_audit_and_export_pages(client):
    c, _store, ids = client
    r = c.post("/reviewer", data={"reviewer": "cy", "back": "/audit"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/audit" and "cy" in r.headers["set-cookie"]
    assert c.post("/reviewer", data={"reviewer": "cy", "back": "//evil"}, follow_redirects=False).headers["location"] == "/queue"
    c.cookies.set(REVIEWER_COOKIE, "cy")
    c.post(f"/items/{ids[('move', 0)]}/accept")
    audit = c.get("/audit")
    assert audit.status_code == 200 and "sign_in" in audit.text and ">cy<" in audit.text
    assert c.get("/audit", params={"actor": "nobody"}).text.count("<tr>") == 2  # header + "nothing logged"
    assert "accept" in c.get("/audit", params={"item": str(ids[("move", 0)])}).text
    page = c.get("/export")
    assert page.status_code == 200 and all(name in page.text for name in EXPORT_FILES)
    # the files' descriptions mark commands as code, as the other pages do, not with Markdown backticks
    assert "<code>officegym review import</code>" in page.text and "`" not in page.text
    for name in EXPORT_FILES:
        r = c.get(f"/export/{name}")
        assert r.status_code == 200, name
    assert json.loads(c.get("/export/manifest.json").text)["counts"]["rl_tasks"] == 1
    assert c.get("/export/nope.txt").status_code == 404


def test_json_api(client):
    c, store, ids = client
    items = c.get("/api/items", params={"reason": "oracle_fails"}).json()
    assert items["total"] == 1 and items["items"][0]["task_id"] == "broken"
    assert c.get("/api/items", params={"limit": "x"}).status_code == 422
    one = c.get(f"/api/items/{ids[('move', 0)]}").json()
    assert one["row"]["officegym"]["task_id"] == "move" and one["decisions"] == []
    assert c.get("/api/items/999").status_code == 404
    assert c.get("/api/counts").json()["status"]["pending"] == 4
    url = f"/api/items/{ids[('broken', 0)]}/decisions"
    assert c.post(url, content=b"[1]").status_code == 422
    assert c.post(url, content=b"{nope").status_code == 422
    assert c.post(url, json={"action": "fly"}).status_code == 400
    refused = c.post(url, json={"action": "correct", "calls": json.loads(BAD_CALLS), "reviewer": "bot"})
    assert refused.status_code == 422 and "Email not found." in refused.json()["detail"]
    check = c.post(url, json={"action": "correct", "calls": json.loads(GOOD_CALLS), "check_only": True})
    assert check.status_code == 200 and check.json()["decision_id"] is None and check.json()["check"]["self_verdict"]["matched"]
    done = c.post(url, json={"action": "reject", "reason": "truth_wrong", "reviewer": "bot"}).json()
    assert done["status"] == "rejected" and store.decisions(ids[("broken", 0)])[0]["reviewer"] == "bot"
    assert c.post("/api/items/999/decisions", json={"action": "accept"}).status_code == 404


def test_cross_origin_posts_are_refused_and_the_api_is_documented(client):
    c, store, ids = client
    url = f"/items/{ids[('move', 0)]}/accept"
    refused = c.post(url, headers={"origin": "http://evil.example"}, follow_redirects=False)
    assert refused.status_code == 403 and store.get(ids[("move", 0)])["status"] == "pending"
    same = c.post(url, headers={"origin": "http://testserver"}, follow_redirects=False)
    assert same.status_code == 303 and store.get(ids[("move", 0)])["status"] == "accepted"
    assert c.get("/api/docs").status_code == 200
    paths = c.get("/api/openapi.json").json()["paths"]
    assert {"/api/items", "/api/items/{item_id}", "/api/counts", "/api/items/{item_id}/decisions"} <= set(paths)


def test_inline_code_escapes_and_leaves_odd_backticks_alone():
    from officegym.review.views import inline_code

    assert str(inline_code("run `a<b>` then `c`")) == "run <code>a&lt;b&gt;</code> then <code>c</code>"
    assert str(inline_code("one ` tick <x>")) == "one ` tick &lt;x&gt;"
