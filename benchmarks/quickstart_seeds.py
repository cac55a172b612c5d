"""The quickstart's GRPO on several seeds from one SFT checkpoint, and the paired test per seed.

    python benchmarks/quickstart_seeds.py --out runs/seeds --seeds 0 1 2 [--parallel | --jobs N] [-- OVERRIDES...]
    python benchmarks/quickstart_seeds.py --out runs/seeds --seeds 0 1 2 --control [--jobs 2] [-- OVERRIDES...]
    python benchmarks/quickstart_seeds.py --out runs/seeds --seeds 0 1 2 --report [--plot curves.png]

Phase A runs `officegym pipeline --config CONFIG` up to eval_sft once, in OUT/seed<first>; its
folder is copied to the other runs' folders, and phase B runs the rest of the pipeline (GRPO,
its evaluation, the report) in each with `grpo.seed=N`, one after another, N at a time (--jobs) or
all at once (--parallel). OVERRIDES (after `--`) go to every pipeline run (e.g. `grpo.model.device=cuda`).
--deadline stops what still runs after that many seconds with SIGINT, as Ctrl-C would: GRPO
saves the step in flight and stops (a rerun of the same command resumes it).
--control adds, for every seed N, the same GRPO stage and seed in OUT/controlN with every advantage
clipped to 1e-9 (`grpo.grpo.advantage_clip=1e-9`): no policy gradient, only what else the stage
trains (the SFT term); a control ships its last step (`grpo.checkpoint.export=last`), and the table
flags a seed that shipped another. Each seed is paired with its own control on the held-out tasks: the pair
differs in the policy gradient alone (the same tasks drawn, the same SFT-term conversations), so it
says whether the gradient itself gained anything. The seeds' runs start before the controls'.
Then, or with --report alone, it prints per seed: the held-out accuracy after SFT and after GRPO
with 95% Wilson intervals, tasks gained and lost, the exact McNemar p, the checkpoint evaluated,
the validation curve and the stage times (each folder's timings.json); and per template, the
tasks solved after SFT and after each seed's GRPO, with those gained and lost: where the gain is.
--plot FILE draws every seed's validation curve and its control's in one PNG (matplotlib).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from officegym.core.files import atomic_write, read_jsonl_text
from officegym.eval.stats import paired_outcomes, task_outcomes, wilson_interval

PHASE_A = "stages=[world,tasks,eval_base,sft,eval_sft]"
SHARED = ("world", "tasks", "eval_base", "sft", "eval_sft")


def _pipeline(config: str, out: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "officegym.cli", "pipeline", "--config", config, f"out_dir={out}", *extra]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run(commands: list[tuple[list[str], Path]], deadline: float | None, jobs: int = 0) -> list[int | None]:
    """Run the commands, at most `jobs` at once (0: all), output to each one's log; at the deadline
    SIGINT what still runs and start nothing more (those not started get return code None)."""
    jobs = jobs or len(commands)
    procs: list[subprocess.Popen | None] = [None] * len(commands)
    interrupted = False
    while True:
        running = [p for p in procs if p is not None and p.poll() is None]
        if deadline is not None and time.monotonic() > deadline and not interrupted:
            print("deadline: interrupting", flush=True)
            for p in running:
                p.send_signal(signal.SIGINT)
            interrupted = True
        waiting = [i for i, p in enumerate(procs) if p is None]
        if not interrupted:
            for i in waiting[: max(0, jobs - len(running))]:
                cmd, log = commands[i]
                log.parent.mkdir(parents=True, exist_ok=True)
                # SIGINT back to its default in the child: a shell's background job (`cmd &`) starts with it
                # ignored, Python then never raises KeyboardInterrupt, and the deadline would stop nothing
                procs[i] = subprocess.Popen(cmd, stdout=log.open("a"), stderr=subprocess.STDOUT,
                                            preexec_fn=_default_sigint)
                running.append(procs[i])
                waiting.remove(i)
        if not running and (interrupted or not waiting):
            return [None if p is None else p.returncode for p in procs]
        time.sleep(1)


def _rows(path: Path) -> list[dict]:
    """The file's rows, read only (a run may still be appending: a torn last line is skipped)."""
    rows = []
    for line in read_jsonl_text(path) if path.is_file() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _acc(accuracy: float, n: int) -> str:
    lo, hi = wilson_interval(round(accuracy * n), n)
    return f"{100 * accuracy:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


CONTROL = "control"
NO_GRADIENT = "grpo.grpo.advantage_clip=1e-9"  # advantages within +-1e-9: the policy gradient is nil
# a control ships its last step, the step its seed ships when validation ties or rises to the end: without
# the policy gradient its validation on a verifier-only template is noise, and `export: best` once paired
# a seed's step 30 with its control's step 10 (chosen on 2 of 12 validation tasks)
LAST = "grpo.checkpoint.export=last"


def _control(seed: int) -> str:
    """The name of seed N's control run (and of its folder): controlN."""
    return f"{CONTROL}{seed}"


def _folder(out: Path, run: int | str) -> Path:
    """Seed N runs in OUT/seedN, a named run (a control) in OUT/NAME."""
    return out / (run if isinstance(run, str) else f"seed{run}")


def _exported(run: Path) -> str:
    """Which checkpoint the run's GRPO stage shipped ("step N" or "the last step"; "?" unknown), from its log."""
    log = run / "pipeline.log"
    found = re.findall(r"done: model in \S+ \((step \d+|the last step)", log.read_text(errors="replace")) if log.is_file() else []
    return found[-1] if found else "?"


def report(out: Path, seeds: list[int]) -> None:
    print("| seed | after SFT | after GRPO | gained / lost | McNemar p | model evaluated | validation (step: accuracy) |"
          " GRPO s | eval_grpo s |")
    print("|---:|---:|---:|---:|---:|---|---|---:|---:|")
    controls = [_control(s) for s in seeds if (_folder(out, _control(s)) / "eval_grpo").is_dir()]
    rows: list[int | str] = [*seeds, *controls]
    for seed in rows:
        run = _folder(out, seed)
        sft, grpo = _rows(run / "eval_sft" / "rollouts.jsonl"), _rows(run / "eval_grpo" / "rollouts.jsonl")
        metrics = _rows(run / "grpo" / "metrics.jsonl")
        curve, seen = [], set()
        for m in metrics:
            if "val/accuracy" in m and m["step"] not in seen:
                seen.add(m["step"])
                curve.append(f"{m['step']}: {100 * m['val/accuracy']:.0f}")
        steps = max((m["step"] for m in metrics if "train/reward_mean" in m), default=0)
        timings = json.loads((run / "timings.json").read_text()) if (run / "timings.json").is_file() else {}
        export = _exported(run)
        if sft and grpo:
            cmp = paired_outcomes(sft, grpo)
            cells = [_acc(cmp.accuracy_a, cmp.n), _acc(cmp.accuracy_b, cmp.n), f"{cmp.only_b} / {cmp.only_a}",
                     f"{cmp.p_value:.2g}"]
        else:
            cells = ["", f"(no eval_grpo; {steps} GRPO steps)", "", ""]
        print(f"| {seed} | " + " | ".join(cells) + f" | {export} | {', '.join(curve)} | {timings.get('grpo', 0):.0f} |"
              f" {timings.get('eval_grpo', 0):.0f} |")
    if controls:
        against_control(out, seeds)
    by_template(out, seeds)
    first = out / f"seed{seeds[0]}" / "timings.json"
    if first.is_file():
        shared = json.loads(first.read_text())
        print("\nshared stages (s): " + ", ".join(f"{k} {shared[k]:.1f}" for k in SHARED if k in shared))


def against_control(out: Path, seeds: list[int]) -> None:
    """Each seed's GRPO model against its control (same stage and seed, no policy gradient) on the
    same held-out tasks: the pair differs in the policy gradient alone."""
    print("\nagainst each seed's control (the same GRPO stage and seed without the policy gradient):")
    print("\n| seed | after GRPO | its control (no policy gradient) | only GRPO / only the control solved | McNemar p |"
          " models evaluated |")
    print("|---:|---:|---:|---:|---:|---|")
    for seed in seeds:
        run, its_control = _folder(out, seed), _folder(out, _control(seed))
        grpo = _rows(run / "eval_grpo" / "rollouts.jsonl")
        control = _rows(its_control / "eval_grpo" / "rollouts.jsonl")
        if not grpo or not control:
            continue
        cmp = paired_outcomes(control, grpo)
        mine, theirs = _exported(run), _exported(its_control)
        steps = f"both {mine}" if mine == theirs else f"NOT PAIRED: {mine} / the control's {theirs}"
        print(f"| {seed} | {_acc(cmp.accuracy_b, cmp.n)} | {_acc(cmp.accuracy_a, cmp.n)} | {cmp.only_b} / {cmp.only_a} |"
              f" {cmp.p_value:.2g} | {steps} |")


def _templates(rows: list[dict]) -> dict[str, str]:
    return {str(r.get("id")): str(r.get("template") or "?") for r in rows}


def by_template(out: Path, seeds: list[int]) -> None:
    """Tasks solved per template after SFT and after each seed's GRPO and control (+gained / -lost)."""
    sft_rows = _rows(out / f"seed{seeds[0]}" / "eval_sft" / "rollouts.jsonl")
    sft, template = task_outcomes(sft_rows), _templates(sft_rows)
    runs = [(f"seed {s}", _folder(out, s)) for s in seeds] + [(f"control {s}", _folder(out, _control(s))) for s in seeds]
    after = {name: task_outcomes(_rows(run / "eval_grpo" / "rollouts.jsonl")) for name, run in runs}
    done = [name for name, _ in runs if after[name]]
    if not sft or not done:
        return
    print("\n| template | tasks | after SFT | " + " | ".join(done) + " |")
    print("|---|---:|---:|" + "---:|" * len(done))
    for name in sorted(set(template.values())):
        ids = [k for k, t in template.items() if t == name]
        cells = []
        for run in done:
            both = [k for k in ids if k in after[run]]
            gained = sum(after[run][k] >= 1.0 and sft[k] < 1.0 for k in both)
            lost = sum(sft[k] >= 1.0 and after[run][k] < 1.0 for k in both)
            cells.append(f"{sum(after[run][k] >= 1.0 for k in both)} (+{gained} / -{lost})")
        print(f"| {name} | {len(ids)} | {sum(sft[k] >= 1.0 for k in ids)} | " + " | ".join(cells) + " |")


def plot_curves(out: Path, seeds: list[int], path: Path) -> Path | None:
    """Each seed's GRPO validation accuracy (solid) and its control's (dashed, same colour) by step,
    written to `path` as a PNG; None when no run has a validation curve."""
    from officegym.eval.plots import available, lines_png
    from officegym.pipeline.run_results import validation_series

    runs = [(f"seed {s}", _folder(out, s), k, "-") for k, s in enumerate(seeds)]
    runs += [(f"control {s}", _folder(out, _control(s)), k, "--") for k, s in enumerate(seeds)]
    lines = [(name, [p[0] for p in series], [100 * p[1] for p in series], style, colour)
             for name, run, colour, style in runs if (series := validation_series(run))]
    if not lines or not available():
        return None
    return atomic_write(path, lines_png("GRPO (solid) vs the same stage without the policy gradient (dashed)", lines,
                                        "GRPO step", "validation accuracy (%)"))


def main() -> None:
    argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        k = argv.index("--")
        argv, extra = argv[:k], argv[k + 1 :]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--config", default="configs/quickstart.yaml")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--parallel", action="store_true", help="run every GRPO stage at once (one machine, shared)")
    ap.add_argument("--jobs", type=int, default=1, help="run at most this many GRPO stages at once")
    ap.add_argument("--deadline", type=float, default=None, help="seconds from now; then SIGINT")
    ap.add_argument("--report", action="store_true", help="only print the table of existing runs")
    ap.add_argument("--plot", type=Path, default=None, help="also draw the validation curves into this PNG")
    ap.add_argument("--control", action="store_true", help="also run each seed's GRPO stage without the policy "
                    f"gradient ({NO_GRADIENT}) in OUT/{CONTROL}N, and pair the seed with it")
    args = ap.parse_args(argv)
    if not args.report:
        start = time.monotonic()
        deadline = None if args.deadline is None else start + args.deadline
        first = args.out / f"seed{args.seeds[0]}"
        print(f"phase A: {first}", flush=True)
        (rc,) = _run([(_pipeline(args.config, first, [PHASE_A, *extra]), first / "pipeline.log")], deadline)
        if rc != 0 or not (first / "eval_sft" / "metrics.json").is_file():
            sys.exit(f"phase A failed (exit {rc}): see {first / 'pipeline.log'}")
        print(f"phase A done in {time.monotonic() - start:.0f} s", flush=True)
        runs = [(s, [f"grpo.seed={s}", *extra]) for s in args.seeds]
        if args.control:
            runs += [(_control(s), [f"grpo.seed={s}", *extra, NO_GRADIENT, LAST]) for s in args.seeds]
        for name, _ in runs[1:]:
            run = _folder(args.out, name)
            for stage in SHARED:
                if not (run / stage).exists():
                    shutil.copytree(first / stage, run / stage)
        jobs = [(_pipeline(args.config, _folder(args.out, s), overrides), _folder(args.out, s) / "pipeline.log")
                for s, overrides in runs]
        _run(jobs, deadline, 0 if args.parallel else max(1, args.jobs))
        print(f"phase B done at {time.monotonic() - start:.0f} s", flush=True)
    report(args.out, args.seeds)
    if args.plot is not None:
        drawn = plot_curves(args.out, args.seeds, args.plot)
        print(f"\nvalidation curves: {drawn}" if drawn else "\nno validation curves to draw (or no matplotlib)")


if __name__ == "__main__":
    main()
