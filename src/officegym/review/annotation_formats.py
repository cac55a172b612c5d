"""The review queue in the annotation tools' formats: Argilla 2.x dataset settings and records,
a Label Studio labelling config and tasks. Each carries the flagger's suggestion and the
reviewers' decisions (review/imports.py reads them back)."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any
from xml.sax.saxutils import quoteattr

from officegym.review import council_view
from officegym.review.store import REJECT_REASONS
from officegym.review.views import diff_tables, prompt_messages, trajectory_turns, verdict_of

DECISION_LABELS = ("accept", *REJECT_REASONS)
# What the flagger's reasons suggest a reviewer will find (Argilla suggestions, Label Studio predictions).
SUGGESTIONS = {
    "oracle_fails": "truth_wrong",
    "all_fail_unchecked": "truth_wrong",
    "distinct_rewarded_states": "verifier_too_lenient",
    "all_pass_hard": "verifier_too_lenient",
    "odd_high_reward": "verifier_too_lenient",
}
AGENT = "officegym-flagger"


def reviewer_uuid(name: str) -> str:
    """A stable UUID for a reviewer name (Argilla wants user ids as UUIDs)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"officegym-reviewer:{name}"))



def _transcript(row: dict[str, Any]) -> str:
    told = council_view.transcript(row)
    if told is not None:
        return told
    lines = []
    for t in trajectory_turns(row):
        lines.append(f"### turn {t['index']}")
        if t["text"]:
            lines.append(t["text"])
        for c in t["calls"]:
            lines.append(f"call {c['name']} [{c['status'] or '?'}]\narguments: {c['arguments']}\noutput: {c['output']}")
    return "\n\n".join(lines) or "(no turns)"


def _task_text(row: dict[str, Any]) -> str:
    return "\n\n".join(f"[{m['role']}] {m['content']}" for m in prompt_messages(row))


def _diff_text(row: dict[str, Any]) -> str:
    verdict = verdict_of(row)
    if isinstance(verdict, dict) and verdict.get("graded") is True:  # a grading verifier's evidence, not a diff
        return "\n".join([f"{verdict.get('label')}: reward {verdict.get('reward')}", *map(str, verdict.get("evidence") or [])])
    tables = diff_tables(verdict)
    if not tables:
        return "no difference from the expected state" if verdict else "no verdict"
    return json.dumps({t["table"]: t["rows"] for t in tables}, ensure_ascii=False, indent=1, default=str)


def _gt_text(item: dict[str, Any]) -> str:
    return json.dumps(item["row"].get("ground_truth"), ensure_ascii=False, indent=1)


def _suggestion(item: dict[str, Any]) -> tuple[str, float]:
    """The flagger's suggested decision and a score in [0, 1]."""
    codes = [r["code"] for r in item["reasons"]]
    label = next((SUGGESTIONS[c] for c in codes if c in SUGGESTIONS), "accept")
    score = min(1.0, float(item["priority"]) / 10.0)
    return label, round(score, 4)


def _decision_label(d: dict[str, Any]) -> str | None:
    if d["action"] == "accept":
        return "accept"
    if d["action"] == "reject":
        return d["reason"]
    if d["action"] == "correct":
        return "truth_wrong"
    return None


def argilla_settings() -> dict[str, Any]:
    """Dataset settings in the shape Argilla 2.x serialises `rg.Settings` to."""
    def text_field(name: str, title: str, markdown: bool = False) -> dict[str, Any]:
        return {"name": name, "title": title, "required": True, "description": None,
                "settings": {"type": "text", "use_markdown": markdown}}

    return {
        "guidelines": "Decide whether the verifier judged this rollout right. Accept when it did; reject with the "
                      "reason when the task, the ground truth or the verifier is wrong; put corrected ground-truth "
                      "calls (a JSON list of {name, arguments}) in corrected_calls.",
        "fields": [
            text_field("task", "Task"), text_field("trajectory", "Trajectory", markdown=True),
            text_field("diff", "Expected vs actual state"), text_field("ground_truth", "Ground truth"),
        ],
        "questions": [
            {"name": "decision", "title": "Decision", "description": None, "required": True,
             "settings": {"type": "label_selection",
                          "options": [{"value": v, "text": "accept" if v == "accept" else REJECT_REASONS[v], "description": None}
                                      for v in DECISION_LABELS],
                          "visible_options": None}},
            {"name": "corrected_calls", "title": "Corrected ground-truth calls (JSON)", "description": None,
             "required": False, "settings": {"type": "text", "use_markdown": False}},
            {"name": "note", "title": "Note", "description": None, "required": False,
             "settings": {"type": "text", "use_markdown": False}},
        ],
        "metadata": [
            {"name": "item_key", "title": "item", "visible_for_annotators": False, "settings": {"type": "terms", "values": None}},
            {"name": "category", "title": "category", "visible_for_annotators": True, "settings": {"type": "terms", "values": None}},
            {"name": "reasons", "title": "flag reasons", "visible_for_annotators": True, "settings": {"type": "terms", "values": None}},
            {"name": "priority", "title": "priority", "visible_for_annotators": True, "settings": {"type": "float", "min": None, "max": None}},
            {"name": "reward", "title": "reward", "visible_for_annotators": True, "settings": {"type": "float", "min": None, "max": None}},
        ],
        "vectors": [],
        "allow_extra_metadata": True,
        "distribution": {"strategy": "overlap", "min_submitted": 1},
    }


def argilla_record(item: dict[str, Any], decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """One item as Argilla 2.x's `Record.to_dict()` shape (what `rg.Record.from_dict` reads)."""
    label, score = _suggestion(item)
    responses: dict[str, list[dict[str, Any]]] = {}
    for d in decisions:
        value = _decision_label(d)
        if value is None:
            continue
        user = reviewer_uuid(d["reviewer"])
        responses.setdefault("decision", []).append({"value": value, "user_id": user, "status": "submitted"})
        if d["action"] == "correct" and d["payload"]:
            responses.setdefault("corrected_calls", []).append(
                {"value": json.dumps(d["payload"]["calls"], ensure_ascii=False), "user_id": user, "status": "submitted"})
        if d["note"]:
            responses.setdefault("note", []).append({"value": d["note"], "user_id": user, "status": "submitted"})
    row = item["row"]
    return {
        "id": item["key"],
        "fields": {"task": _task_text(row), "trajectory": _transcript(row), "diff": _diff_text(row), "ground_truth": _gt_text(item)},
        "metadata": {"item_key": item["key"], "category": item.get("category") or "-",
                     "reasons": [r["code"] for r in item["reasons"]], "priority": item["priority"],
                     "reward": item.get("reward"), "reviewers": sorted({d["reviewer"] for d in decisions})},
        "suggestions": {"decision": {"value": label, "score": score, "agent": AGENT}},
        "responses": responses,
        "vectors": {},
        "_server_id": None,
    }


def label_studio_config() -> str:
    choices = "\n".join(f"    <Choice value={quoteattr(v)}/>" for v in DECISION_LABELS)
    return (
        "<View>\n"
        '  <Header value="Task"/>\n  <Text name="task" value="$task"/>\n'
        '  <Header value="Trajectory"/>\n  <Text name="trajectory" value="$trajectory"/>\n'
        '  <Header value="Expected vs actual state"/>\n  <Text name="diff" value="$diff"/>\n'
        '  <Header value="Ground truth"/>\n  <Text name="ground_truth" value="$ground_truth"/>\n'
        '  <Choices name="decision" toName="trajectory" choice="single" required="true">\n'
        f"{choices}\n  </Choices>\n"
        '  <TextArea name="corrected_calls" toName="trajectory" editable="true" maxSubmissions="1" '
        'placeholder="corrected ground-truth calls: [{&quot;name&quot;: ..., &quot;arguments&quot;: {...}}]"/>\n'
        '  <TextArea name="note" toName="trajectory" editable="true" maxSubmissions="1"/>\n'
        "</View>\n"
    )


def _ls_result(name: str, kind: str, value: dict[str, Any]) -> dict[str, Any]:
    rid = hashlib.sha1(f"{name}:{json.dumps(value, sort_keys=True)}".encode()).hexdigest()[:10]
    return {"id": rid, "from_name": name, "to_name": "trajectory", "type": kind, "value": value}


def label_studio_task(item: dict[str, Any], decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """One item as a Label Studio task: `data` for the config's $variables, the flagger's
    suggestion as a prediction with a score, and each reviewer decision as an annotation."""
    label, score = _suggestion(item)
    row = item["row"]
    annotations = []
    for d in decisions:
        value = _decision_label(d)
        if value is None:
            continue
        result = [_ls_result("decision", "choices", {"choices": [value]})]
        if d["action"] == "correct" and d["payload"]:
            result.append(_ls_result("corrected_calls", "textarea", {"text": [json.dumps(d["payload"]["calls"], ensure_ascii=False)]}))
        if d["note"]:
            result.append(_ls_result("note", "textarea", {"text": [d["note"]]}))
        annotations.append({"result": result, "was_cancelled": False, "ground_truth": False, "created_at": d["at"],
                            "updated_at": d["at"], "meta": {"reviewer": d["reviewer"]}})
    return {
        "data": {"item_key": item["key"], "task": _task_text(row), "trajectory": _transcript(row), "diff": _diff_text(row),
                 "ground_truth": _gt_text(item), "category": item.get("category"), "priority": item["priority"],
                 "reasons": ", ".join(r["code"] for r in item["reasons"]), "reward": item.get("reward")},
        "predictions": [{"model_version": AGENT, "score": score,
                         "result": [_ls_result("decision", "choices", {"choices": [label]})]}],
        "annotations": annotations,
    }
