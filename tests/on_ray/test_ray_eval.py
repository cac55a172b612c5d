"""Evaluation on Ray actors: the local cluster listens on the loopback only, episodes on 2 workers give
the single-process rows, an interrupted run resumes the same rollouts.jsonl, and the CLI's --ray."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from officegym.agent.loop import LoopConfig
from officegym.agent.policies import make_policy
from officegym.agent.ray_rollouts import FleetSetupError, RayOptions, RolloutFleet
from officegym.agent.ray_workers import EnvSpec, PolicySpec
from officegym.core import registry
from officegym.core.files import load_appendable_jsonl
from officegym.eval.run import run_eval
from officegym.rewards import training_reward

POLICY = "random:3"  # schema-valid calls with words from the conversation: reads, writes, refusals, errors


def timeless(rows):
    """Rows by (task id, sample index), without the wall-clock fields (they differ run to run)."""
    out = {}
    for row in rows:
        row = json.loads(json.dumps(row))
        og = row["officegym"]
        for key in ("seconds", "env_seconds"):
            og.pop(key, None)
        out[(og["task_id"], og["sample_index"])] = row
    return out


@pytest.fixture(scope="module")
def env(world_dir):
    return registry.make("workplace", world=world_dir)


@pytest.fixture(scope="module")
def reward_fn(env):
    return training_reward("shaped", writes=env.write_tools)


@pytest.fixture(scope="module")
def single_process(tmp_path_factory, env, tasks, reward_fn):
    out = tmp_path_factory.mktemp("single")
    return run_eval(env, tasks, make_policy(POLICY), out, k=2, config=LoopConfig(max_steps=3), reward_fn=reward_fn)


@pytest.fixture(scope="module")
def fleet(ray_cluster):
    # half a CPU each: the CLI test and the refusals below start fleets of their own beside it
    with RolloutFleet.start(PolicySpec(POLICY), RayOptions(workers=2, worker_cpus=0.5, concurrency=8)) as f:
        yield f


def _listening_sockets_of(pids: set[int]) -> list[tuple[int, str]]:
    """(pid, local address in /proc's hex form) of every listening TCP socket these processes hold."""
    inodes: dict[str, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for line in fh.readlines()[1:]:
                parts = line.split()
                if parts[3] == "0A":  # LISTEN
                    inodes[parts[9]] = parts[1].rsplit(":", 1)[0]
    found = []
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    found.append((pid, inodes[target[8:-1]]))
        except OSError:  # a process that ended meanwhile
            continue
    return found


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's /proc/net/tcp")
def test_the_local_cluster_listens_on_the_loopback_only(ray_cluster, fleet):
    """Every socket the Ray processes of this test session listen on (GCS, raylet, agents, workers,
    this driver) is bound to 127.0.0.1: Ray would otherwise listen on all interfaces."""
    sockets = _listening_sockets_of(_descendants(os.getpid()))
    assert len(sockets) >= 4, sockets  # GCS, raylet, the workers: a check that found nothing proves nothing
    assert [(pid, addr) for pid, addr in sockets if addr not in LOOPBACK] == []


def test_eval_on_two_ray_workers_gives_the_single_process_rows(tmp_path, fleet, env, tasks, reward_fn, single_process,
                                                               world_dir):
    result = run_eval(env, tasks, None, tmp_path, k=2, config=LoopConfig(max_steps=3), reward_fn=reward_fn,
                      fleet=fleet, env_spec=EnvSpec("workplace", str(world_dir)))
    assert result.new == 2 * len(tasks)
    here, there = timeless(single_process.rows), timeless(result.rows)
    assert there == here
    assert {r["reward"] for r in here.values()} != {0.0}  # the comparison covers rewards that differ
    assert timeless(load_appendable_jsonl(tmp_path / "rollouts.jsonl")) == here
    assert fleet.worker_stats()["episodes"] >= 2 * len(tasks)


def test_an_interrupted_ray_eval_resumes_the_same_rollouts_file(tmp_path, fleet, env, tasks, reward_fn, single_process,
                                                                world_dir):
    done = []

    def stop_after_five(n: int) -> None:
        done.append(n)
        if len(done) == 5:
            raise KeyboardInterrupt

    spec = EnvSpec("workplace", str(world_dir))
    config = LoopConfig(max_steps=3)
    with pytest.raises(KeyboardInterrupt):
        run_eval(env, tasks, None, tmp_path, k=2, config=config, reward_fn=reward_fn, progress=stop_after_five,
                 fleet=fleet, env_spec=spec)
    assert len(load_appendable_jsonl(tmp_path / "rollouts.jsonl")) == 5
    result = run_eval(env, tasks, None, tmp_path, k=2, config=config, reward_fn=reward_fn, fleet=fleet, env_spec=spec)
    assert (result.skipped, result.new) == (5, 2 * len(tasks) - 5)
    assert timeless(load_appendable_jsonl(tmp_path / "rollouts.jsonl")) == timeless(single_process.rows)


def test_officegym_eval_with_ray(tmp_path, ray_cluster, world_dir, tasks):
    from typer.testing import CliRunner

    from officegym.cli import app
    from officegym.core.task import write_jsonl

    write_jsonl(tmp_path / "tasks.jsonl", tasks[:6])
    args = ["eval", "--policy", "oracle", "--tasks", str(tmp_path / "tasks.jsonl"), "--world", str(world_dir),
            "--out", str(tmp_path / "run"), "--ray", "--ray-workers", "2", "--ray-worker-cpus", "0.5"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = load_appendable_jsonl(tmp_path / "run" / "rollouts.jsonl")
    assert len(rows) == 6 and all(r["reward"] == 1.0 for r in rows)
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["ray"] == {"address": None, "workers": 2, "engines": 0}
    assert Path(tmp_path / "run" / "metrics.json").exists()


def test_a_fleet_the_cluster_cannot_place_or_whose_policy_cannot_run_is_refused(ray_cluster):
    with pytest.raises(FleetSetupError, match=r"needs 3 CPUs .* has \d(\.\d+)? free"):
        RolloutFleet.start(PolicySpec("oracle"), RayOptions(workers=3))
    unreachable = PolicySpec("openai:m", {"base_url": "http://127.0.0.1:9/v1", "timeout": 2.0})
    with pytest.raises(FleetSetupError, match="cannot reach the model server"):
        RolloutFleet.start(unreachable, RayOptions(workers=1))


def test_an_address_where_nothing_answers_is_a_clear_error_at_once():
    """Ray itself retries a dead address for minutes; officegym eval --ray-address says so in seconds."""
    from officegym.agent.ray_cluster import RayUnavailableError, _reachable

    with pytest.raises(RayUnavailableError, match=r"no Ray cluster answers at 127\.0\.0\.1:1 "):
        _reachable("127.0.0.1:1", timeout=2)
    with pytest.raises(RayUnavailableError, match="HOST:PORT"):
        _reachable("not-an-address")
