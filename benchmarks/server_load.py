"""Load test of the HTTP resources server on 127.0.0.1.

Starts `python -m officegym.server.serve` in a subprocess, then for each concurrency level runs two
phases of `--duration` seconds each, with that many clients (one keep-alive connection each):

* episodes: seed_session (a new session each time), then six tool calls (e-mail search, directory,
  event by id, a CRM write, task search, an analytics count), then close_session (the server answers
  503 to new sessions at its cap), again and again; seed, tool and close latencies recorded apart;
* verify:   POST /verify of a task row whose response holds its ground-truth calls (reward must be 1).

Reports throughput, p50/p99 latency and errors (a non-200 answer or an unexpected body) per level
and endpoint, and the server's peak RSS (VmHWM) and live sessions. Traffic goes to 127.0.0.1 only;
the run stops itself after levels x 2 x duration seconds and always stops the server.

    python benchmarks/server_load.py --world $OFFICEGYM_REFERENCE/csv_data [--duration 30] [--levels 1,16,64]

The client is a minimal HTTP/1.1 reader/writer on asyncio streams (not httpx), so that on a small
machine it takes as little CPU from the server as it can; it shares the machine's cores with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[1]
# NeMo Gym's resources_servers/workplace_assistant (its tool cycle names that world's people and ids)
DEFAULT_WORLD = Path(os.environ.get("OFFICEGYM_REFERENCE", REPO.parent / "shared" / "reference" / "workplace")) / "csv_data"

TOOL_CYCLE = [
    ("email_search_emails", {"query": "carlos prototype"}),
    ("company_directory_find_email_address", {"name": "carlos"}),
    ("calendar_get_event_information_by_id", {"event_id": "00000013", "field": "event_name"}),
    ("customer_relationship_manager_update_customer", {"customer_id": "00000095", "field": "status", "new_value": "Won"}),
    ("project_management_search_tasks", {"assigned_to_email": "leila.azizi@atlas.com"}),
    ("analytics_total_visits_count", {"time_min": "2023-11-01", "time_max": "2023-11-30"}),
]


@dataclass
class Record:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    first_error: str | None = None

    def add(self, what: str, seconds: float, ok: bool, detail: str = "") -> None:
        self.latencies.setdefault(what, []).append(seconds)
        if not ok:
            self.errors[what] = self.errors.get(what, 0) + 1
            self.first_error = self.first_error or f"{what}: {detail[:300]}"


class Connection:
    """One keep-alive HTTP/1.1 connection; answers must carry Content-Length (uvicorn's do)."""

    def __init__(self, port: int):
        self.port = port
        self.cookie: str | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(HOST, self.port)

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        head = f"POST {path} HTTP/1.1\r\nhost: {HOST}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        if self.cookie:
            head += f"cookie: {self.cookie}\r\n"
        self.writer.write(head.encode() + b"\r\n" + body)
        status = int((await self.reader.readline()).split()[1])
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "set-cookie":
                self.cookie = value.strip().split(";", 1)[0]
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


async def episodes(port: int, deadline: float, rec: Record) -> None:
    conn = Connection(port)
    await conn.open()
    bodies = [(f"/{n}", json.dumps(a).encode()) for n, a in TOOL_CYCLE]
    episode = 0
    try:
        while time.perf_counter() < deadline:
            conn.cookie = None  # a new episode is a new session, as for NeMo Gym's agent: they pile up
            t0 = time.perf_counter()
            status, data = await conn.post("/seed_session", b"{}")
            rec.add("seed_session", time.perf_counter() - t0, status == 200 and data == b"{}", data.decode(errors="replace"))
            for path, body in bodies:
                t0 = time.perf_counter()
                status, data = await conn.post(path, body)
                ok = status == 200 and data.startswith(b'{"output":') and b"Error executing" not in data
                rec.add("tool call", time.perf_counter() - t0, ok, f"{path} {status} {data[:200]!r}")
            episode += 1
            rollout = f"load{id(conn)}x{episode}"
            close = json.dumps({"resources_session_id": rollout, "episode_id": {"rollout_id": rollout}}).encode()
            t0 = time.perf_counter()
            status, data = await conn.post("/close_session", close)
            rec.add("close_session", time.perf_counter() - t0, status == 200, f"{status} {data[:200]!r}")
    finally:
        conn.close()


async def verifies(port: int, deadline: float, rec: Record, body: bytes) -> None:
    conn = Connection(port)
    await conn.open()
    try:
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            status, data = await conn.post("/verify", body)
            ok = status == 200 and json.loads(data).get("reward") == 1.0
            rec.add("verify", time.perf_counter() - t0, ok, f"{status} {data[:200]!r}")
    finally:
        conn.close()


def verify_body(world: Path) -> tuple[bytes, int]:
    """The reference's example task with the most ground-truth calls, answered by those calls."""
    example = world.parent / "example.jsonl"
    if example.is_file():
        rows = [json.loads(line) for line in example.read_text().splitlines() if line.strip()]
        row = max(rows, key=lambda r: len(r["ground_truth"]))
    else:
        from officegym.envs.workplace.specs import TOOL_SPECS

        gt = [{"name": "customer_relationship_manager_update_customer",
               "arguments": json.dumps({"customer_id": "00000095", "field": "status", "new_value": "Won"})}]
        row = {"id": 0, "responses_create_params": {"input": [{"role": "user", "content": "x"}],
                                                    "tools": [s.to_schema() for s in TOOL_SPECS]},
               "ground_truth": gt, "category": "workplace_assistant_customer_relationship_manager",
               "environment_name": "workplace_assistant"}
    output = [{"type": "function_call", "name": g["name"], "arguments": g["arguments"], "call_id": f"call_{i}",
               "status": "completed"} for i, g in enumerate(row["ground_truth"])]
    return json.dumps({**row, "response": {"output": output}}).encode(), len(row["ground_truth"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def rss_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, from /proc (Linux)."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def start_server(world: Path, port: int, max_sessions: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "officegym.server.serve", "--world", str(world), "--port", str(port),
           "--max-sessions", str(max_sessions), "--log-level", "error"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            with socket.create_connection((HOST, port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the server did not start within 30 s")


def health(port: int) -> dict:
    with socket.create_connection((HOST, port), timeout=5) as s:
        s.sendall(f"GET /health HTTP/1.1\r\nhost: {HOST}\r\nconnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def run_phase(kind: str, port: int, clients: int, duration: float, body: bytes) -> tuple[Record, float]:
    rec = Record()
    start = time.perf_counter()
    deadline = start + duration
    if kind == "episodes":
        jobs = [episodes(port, deadline, rec) for _ in range(clients)]
    else:
        jobs = [verifies(port, deadline, rec, body) for _ in range(clients)]
    await asyncio.wait_for(asyncio.gather(*jobs), timeout=duration + 60)
    return rec, time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", type=Path, default=DEFAULT_WORLD)
    p.add_argument("--duration", type=float, default=30.0, help="seconds per phase and level")
    p.add_argument("--levels", default="1,16,64", help="concurrent clients, comma-separated")
    p.add_argument("--max-sessions", type=int, default=10_000)
    p.add_argument("--json", type=Path, default=None, help="also write the results here")
    a = p.parse_args()
    if not (a.world / "processed").is_dir():
        p.error(f"--world {a.world}: not a csv_data folder")
    levels = [int(x) for x in a.levels.split(",") if x.strip()]
    if any(n < 1 or n > 512 for n in levels):
        p.error("--levels: between 1 and 512 clients")
    body, gt_calls = verify_body(a.world)
    port = free_port()
    proc = start_server(a.world, port, a.max_sessions)
    rows: list[dict] = []
    try:
        asyncio.run(run_phase("episodes", port, 4, min(2.0, a.duration), body))  # warm-up
        for clients in levels:
            for phase in ("episodes", "verify"):
                rec, elapsed = asyncio.run(run_phase(phase, port, clients, a.duration, body))
                for what, lat in rec.latencies.items():
                    n, errors = len(lat), rec.errors.get(what, 0)
                    row = {"clients": clients, "endpoint": what, "requests": n, "per_s": n / elapsed,
                           "p50_ms": pct(lat, 0.50) * 1e3, "p99_ms": pct(lat, 0.99) * 1e3,
                           "mean_ms": statistics.fmean(lat) * 1e3, "errors": errors}
                    rows.append(row)
                    print(f"  {clients:>3} clients  {what:<13} {n:>8} req  {row['per_s']:>8.0f}/s  "
                          f"p50 {row['p50_ms']:7.2f} ms  p99 {row['p99_ms']:7.2f} ms  errors {errors}", flush=True)
                if rec.first_error:
                    print(f"  first error: {rec.first_error}", flush=True)
        mem = rss_kb(proc.pid)
        sessions = health(port)["sessions"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    try:
        import uvicorn

        impl = f"uvicorn {uvicorn.__version__}"
        for mod, label in (("httptools", "httptools"), ("uvloop", "uvloop")):
            try:
                __import__(mod)
                impl += f" +{label}"
            except ImportError:
                pass
    except ImportError:
        impl = "?"
    print()
    print(f"{time.strftime('%Y-%m-%d')} | Python {platform.python_version()} | {platform.machine()} | {os.cpu_count()} CPUs | "
          f"{impl} | duration {a.duration:g} s per phase | verify row: {gt_calls} ground-truth calls")
    print("| clients | endpoint | requests | throughput (/s) | p50 (ms) | p99 (ms) | errors |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['clients']} | {r['endpoint']} | {r['requests']:,} | {r['per_s']:,.0f} | {r['p50_ms']:.2f} | "
              f"{r['p99_ms']:.2f} | {r['errors']} |")
    peak = mem.get("VmHWM", 0) / 1024
    print(f"server peak RSS {peak:.1f} MiB (now {mem.get('VmRSS', 0) / 1024:.1f} MiB); sessions: {sessions}")
    total_errors = sum(r["errors"] for r in rows)
    if a.json is not None:
        a.json.write_text(json.dumps({"rows": rows, "peak_rss_kib": mem.get("VmHWM"), "sessions": sessions,
                                      "server": impl, "duration_s": a.duration}, indent=2))
    return 1 if total_errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
