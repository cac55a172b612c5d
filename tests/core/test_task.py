from __future__ import annotations

import json

import pytest

from officegym.core.task import Task, TaskFormatError, read_tasks, write_jsonl

ROW = {
    "id": 7,
    "responses_create_params": {
        "input": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Delete email 1"}],
        "tools": [{"type": "function", "name": "email_delete_email", "parameters": {}}],
        "parallel_tool_calls": False,
        "temperature": 1.0,
        "max_output_tokens": 512,
    },
    "ground_truth": [{"name": "email_delete_email", "arguments": "{\"email_id\":  \"00000001\"}"}],
    "category": "workplace_assistant_email",
    "environment_name": "workplace_assistant",
    "agent_ref": {"name": "workplace_assistant_simple_agent"},
    "_ng_task_index": 3,
    "pattern": "lookup_then_delete",
}


def test_round_trip_is_lossless_including_key_order_and_raw_arguments():
    task = Task.from_row(ROW)
    assert task.id == 7 and task.user_prompt == "Delete email 1"
    assert task.ground_truth[0].arguments == {"email_id": "00000001"}
    assert task.tool_names == ["email_delete_email"]
    assert task.metadata["agent_ref"] == {"name": "workplace_assistant_simple_agent"}
    out = task.to_row()
    assert out == ROW
    assert list(out) == list(ROW)
    assert json.dumps(out) == json.dumps(ROW)


def test_string_ground_truth_round_trips_and_means_no_calls():
    row = {**ROW, "ground_truth": "not a list"}
    task = Task.from_row(row)
    assert task.ground_truth == [] and task.to_row()["ground_truth"] == "not a list"


def test_string_input_becomes_a_user_message():
    task = Task.from_row({"id": 1, "responses_create_params": {"input": "hello"}, "ground_truth": []})
    assert task.input == [{"role": "user", "content": "hello"}]


def test_nested_verifier_metadata_ground_truth_is_read():
    row = {"id": 1, "responses_create_params": {"input": []},
           "verifier_metadata": {"ground_truth": [{"name": "a_b", "arguments": "{}"}]}}
    task = Task.from_row(row)
    assert [c.name for c in task.ground_truth] == ["a_b"]
    assert task.to_row() == row


def test_bad_rows_give_clear_errors(tmp_path):
    with pytest.raises(TaskFormatError):
        Task.from_row([1, 2])
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(ROW) + "\n{broken\n")
    with pytest.raises(TaskFormatError, match=r"t.jsonl:2: not valid JSON"):
        read_tasks(path)


def test_write_jsonl_is_atomic_and_reads_back(tmp_path):
    path = tmp_path / "sub" / "tasks.jsonl"
    assert write_jsonl(path, [Task.from_row(ROW), {"x": 1}]) == 2
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == ROW and json.loads(lines[1]) == {"x": 1}
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]

    class Boom:
        def to_row(self):
            raise RuntimeError("boom")

    with pytest.raises(TypeError):
        write_jsonl(path, [{"ok": 1}, object()])
    # the failed write left the previous file intact
    assert json.loads(path.read_text().splitlines()[0]) == ROW


def test_reference_examples_round_trip(reference_dir):
    for line in (reference_dir / "example.jsonl").read_text().splitlines():
        row = json.loads(line)
        assert Task.from_row(row).to_row() == row


@pytest.mark.parametrize("rcp", [{"input": None}, {"input": 5}, {"input": [], "tools": "x"}, {"input": [], "tools": [1]}])
def test_malformed_prompt_fields_are_task_format_errors(rcp):
    with pytest.raises(TaskFormatError, match="responses_create_params"):
        Task.from_row({"id": 3, "responses_create_params": rcp})


def test_from_row_shares_the_row_instead_of_copying_it():
    # Rows are read-only data: a Task points at the row's messages, tool schemas and metadata values.
    # A deep copy here was ~75% of `officegym verify`'s time per rollout (27 tool schemas a row).
    tools = [{"type": "function", "name": f"tool_{i}", "parameters": {"type": "object", "properties": {
        "x": {"type": "string", "description": "d" * 200}}}} for i in range(27)]
    row = {**ROW, "responses_create_params": {**ROW["responses_create_params"], "tools": tools},
           "ground_truth": [{"name": "email_delete_email", "arguments": {"email_id": "00000001", "tags": ["a"]}}]}
    task = Task.from_row(row)
    rcp = row["responses_create_params"]
    assert all(a is b for a, b in zip(task.tools, rcp["tools"], strict=True))
    assert all(a is b for a, b in zip(task.input, rcp["input"], strict=True))
    assert task.metadata["agent_ref"] is row["agent_ref"]
    assert task.ground_truth[0].arguments is row["ground_truth"][0]["arguments"]
    # ... while the Task's own containers are its own: replacing an item leaves the row alone
    assert task.tools is not rcp["tools"] and task.input is not rcp["input"] and task.metadata is not row
    task.input[0] = {"role": "system", "content": "changed"}
    task.metadata["extra"] = 1
    assert rcp["input"][0] == {"role": "system", "content": "sys"} and "extra" not in row


def test_to_row_gives_a_row_the_caller_may_change():
    task = Task.from_row(ROW)
    out = task.to_row()
    out["responses_create_params"]["tools"].clear()
    out["responses_create_params"]["input"][0]["content"] = "changed"
    assert task.to_row() == ROW and task.tools and task.input[0]["content"] == "sys"


def _tools(tag: str = "", n: int = 27) -> list:
    return [{"type": "function", "name": f"tool{tag}_{i}", "description": f"Does thing {i} — ünïcode {tag}",
             "parameters": {"type": "object", "properties": {"x": {"type": "string", "enum": ["a", "b"]}},
                            "required": ["x"]}, "strict": False} for i in range(n)]


def test_row_decoder_gives_what_json_loads_gives_and_shares_repeated_tool_lists():
    import random

    from officegym.core.task import RowDecoder

    rng = random.Random(5)
    lists = [_tools(t) for t in ("", "b", "c")]
    decoder = RowDecoder()
    plain: dict[int, set[int]] = {}  # list -> ids of the decoded lists of rows written the usual way
    kept = []  # every decoded row stays alive, so no id is reused
    for i in range(300):
        k = rng.randrange(3)
        tools = lists[k]
        rcp = {"input": [{"role": "user", "content": rng.choice(["hi", json.dumps(tools), "[{\"type\""])}],
               "tools": tools, "temperature": 1.0}
        row = {"id": i, "responses_create_params": rcp, "ground_truth": []}
        usual = True
        if rng.random() < 0.2:  # the same list elsewhere too, before or after the task's
            row = {"response": {"tools": tools}, **row} if rng.random() < 0.5 else {**row, "response": {"tools": tools}}
            usual = False
        if rng.random() < 0.1:
            rcp["tools"], usual = tools[:3], False
        if rng.random() < 0.1:
            row["responses_create_params"], usual = [rcp], False  # not an object: not a task row at all
        ascii_only, compact = rng.random() < 0.3, rng.random() < 0.1
        line = json.dumps(row, ensure_ascii=ascii_only, separators=(",", ":") if compact else None)
        got = decoder.loads(line)
        kept.append(got)
        assert got == json.loads(line), i
        assert json.dumps(got) == json.dumps(json.loads(line)), i
        if usual and not ascii_only and not compact:
            assert got["responses_create_params"]["tools"] is not tools  # the decoder's own value
            plain.setdefault(k, set()).add(id(got["responses_create_params"]["tools"]))
    assert sorted(plain) == [0, 1, 2] and all(len(ids) == 1 for ids in plain.values())


def test_row_decoder_falls_back_on_lines_the_shortcut_does_not_fit():
    from officegym.core.task import RowDecoder

    decoder = RowDecoder()
    row = {"id": 1, "responses_create_params": {"input": "x", "tools": _tools()}}
    decoder.loads(json.dumps(row))
    # a damaged line holding the known text: the same error json.loads gives
    bad = json.dumps(row)[:-1]
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(bad)
    with pytest.raises(json.JSONDecodeError) as ours:
        decoder.loads(bad)
    assert str(ours.value) == str(theirs.value)
    # a line holding the placeholder's token is decoded whole
    tricky = {"id": 2, "note": decoder._token, "responses_create_params": {"input": "x", "tools": _tools()}}
    assert decoder.loads(json.dumps(tricky)) == tricky


def test_reading_a_task_file_shares_one_tool_list_between_rows(tmp_path):
    rows = [{**ROW, "id": i, "responses_create_params": {**ROW["responses_create_params"], "tools": _tools()}}
            for i in range(5)]
    path = tmp_path / "tasks.jsonl"
    write_jsonl(path, rows)
    tasks = read_tasks(path)
    assert [t.to_row() for t in tasks] == rows
    assert all(t.tools[0] is tasks[0].tools[0] for t in tasks[2:])


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}', "-0", "-0.0", "1e-400", "1e309", "NaN", "-Infinity", "12345678901234567890123",
    "-9223372036854775809", "18446744073709551616", '"\\ud800"', '{"a": "\\udc00x"}', "0.1", '"\\u00e9"',
    " {} ", "\ufeff{}", "[1,]", '{"a": 1}x', "{", "", '"\x01"', "{'a': 1}", '{"k": [true, false, null, 2.5e3]}',
])
def test_loads_gives_exactly_what_json_loads_gives(text):
    from officegym.core.task import loads

    try:
        expected = json.loads(text)
    except json.JSONDecodeError as exc:
        with pytest.raises(json.JSONDecodeError) as ours:
            loads(text)
        assert str(ours.value) == str(exc)
    else:
        got = loads(text)
        assert repr(got) == repr(expected) and type(got) is type(expected)
