"""How busy this machine's cores are, and how many threads torch should take.

OpenMP threads wait for each other at every parallel region: when another process holds one of
the cores a thread runs on, every region waits for the slowest thread, and a step measured at 18 s
took 180 s. Taking only the cores nobody else is using keeps the slowdown proportional.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def niced_load_yields() -> bool:
    """Whether processes running at a positive nice value give way to this one: it is not niced
    itself, and the scheduler does not group processes by session (with autogroup on, nice only
    orders the processes of one session, so a niced job elsewhere competes as an equal)."""
    try:
        if os.getpriority(os.PRIO_PROCESS, 0) > 0:
            return False
        with open("/proc/sys/kernel/sched_autogroup_enabled", encoding="ascii") as f:
            return f.read().strip() == "0"
    except FileNotFoundError:  # a kernel without autogroup: nice applies machine-wide
        return True
    except (AttributeError, OSError, ValueError):
        return False


def _cpu_times() -> tuple[float, float] | None:
    """(busy, total) jiffies summed over all cores, from /proc/stat (None where it does not exist);
    time of niced processes does not count as busy when they give way to this one."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [float(v) for v in fields[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
    if niced_load_yields():
        idle += values[1]  # "nice": a core they hold is ours when we ask
    return sum(values[:8]) - idle, sum(values[:8])


@dataclass(frozen=True)
class Load:
    """Cores in use by all processes over a short window (`busy` in cores), and the cores there are."""

    busy: float
    cores: int

    @property
    def free(self) -> int:
        return max(1, int(self.cores - self.busy + 0.5))


def measure_load(seconds: float = 0.5) -> Load | None:
    """Cores busy over `seconds` (this process sleeps meanwhile, so the load is everyone else's)."""
    first = _cpu_times()
    if first is None:
        return None
    time.sleep(seconds)
    second = _cpu_times()
    if second is None or second[1] <= first[1]:
        return None
    cores = os.cpu_count() or 1
    busy = (second[0] - first[0]) / (second[1] - first[1]) * cores
    return Load(busy=max(0.0, busy), cores=cores)


def default_threads(load: Load | None = None) -> int:
    """Threads for torch: OFFICEGYM_THREADS when set, else the usable cores nobody else keeps busy."""
    env = os.environ.get("OFFICEGYM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    cores = usable_cores()
    if load is None:
        load = measure_load(0.3)
    if load is None:
        return cores
    return max(1, min(cores, load.free))


class ThreadGovernor:
    """Re-chooses the thread count at every training step, so that a process that starts using a
    core in the middle of a run costs the rest of the run one step at most (threads chosen once at
    start kept 2 threads on 2 cores for the whole run, 10x slower once another process took one).

    `fixed` (model.threads or OFFICEGYM_THREADS) turns it off. `update()` measures the load over
    `window` seconds (this process sleeps meanwhile: a step boundary, nothing of ours runs), sets
    torch's count for the calling thread and returns (threads, busy cores of other processes)."""

    def __init__(self, fixed: int | None = None, window: float = 0.2):
        env = os.environ.get("OFFICEGYM_THREADS", "").strip()
        self.fixed = fixed or (int(env) if env.isdigit() and int(env) > 0 else None)
        self.window = window
        self.threads: int | None = None

    def update(self) -> tuple[int, float | None]:
        import torch

        if self.fixed:
            n, busy = self.fixed, None
        else:
            load = measure_load(self.window)
            n, busy = default_threads(load), (load.busy if load is not None else None)
        if n != torch.get_num_threads():
            torch.set_num_threads(n)
        self.threads = n
        return n, busy


def thread_metrics(threads: int, busy: float | None) -> dict[str, float]:
    """What a training step logs about the machine: its threads and the cores others kept busy."""
    out = {"machine/threads": float(threads)}
    if busy is not None:
        out["machine/busy_cores"] = round(busy, 2)
    return out


def load_advice(load: Load | None) -> str | None:
    """A sentence for the user when other work keeps cores busy (None when the machine is quiet)."""
    if load is None or load.busy < 0.5:
        return None
    n = load.free
    return (f"other processes keep {load.busy:.1f} of {load.cores} cores busy: training uses {n} "
            f"thread{'s' if n != 1 else ''} and every stage runs slower than on an idle machine "
            "(set OFFICEGYM_THREADS or model.threads to choose)")


# CPU features that run bfloat16 matrix products in hardware. Without them PyTorch and vLLM emulate
# bf16: on a 2-core AVX2 EPYC, a bf16-autocast training step was 31x slower than float32 and vLLM
# decoded at 16 tok/s in bfloat16 against 28 in float32 (docs/archive/benchmarks-2026-11.md, "The quickstart on a 2-core AVX2 EPYC").
BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


def cpu_bf16(flags: set[str] | None = None) -> str | None:
    """The flag that gives this CPU native bfloat16 matrix products, or None (emulated: slow).
    OFFICEGYM_CPU_BF16=0 or 1 overrides what the flags say."""
    forced = os.environ.get("OFFICEGYM_CPU_BF16", "").strip()
    if flags is None and forced in ("0", "1"):
        return "OFFICEGYM_CPU_BF16" if forced == "1" else None
    flags = cpu_flags() if flags is None else flags
    return next((f for f in BF16_FLAGS if f in flags), None)


def cpu_dtype() -> str:
    """The dtype CPU generation and training default to: bfloat16 where the CPU has it in hardware,
    float32 elsewhere."""
    return "bfloat16" if cpu_bf16() else "float32"
