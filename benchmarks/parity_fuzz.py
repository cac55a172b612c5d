"""Long differential fuzz of officegym's workplace tools and verifier against NeMo Gym's reference.

    PYTHONPATH=src python benchmarks/parity_fuzz.py --calls 20000 --pairs 2000 --seed 0 [--fetch]

Runs random call sequences (fresh environments on both sides) and random (predicted, ground truth)
pairs, then prints, per tool, the calls made and the output agreement, every distinct divergence
(first example of each, with the sequence that produced it), and the verdict agreement.

Exit status: 0 when every divergence is in KNOWN_DIVERGENCES (benchmarks/parity_calls.py, which
documents each one and why it is accepted), 1 otherwise, 2 when the reference is unavailable.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import OrderedDict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import parity_calls as pc


def _table(title: str, header: list[str], rows: list[list[str]]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        print(f"\n{title}")
        for r in [header, *rows]:
            print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))
        return
    t = Table(title=title)
    for h in header:
        t.add_column(h, overflow="fold")
    for r in rows:
        t.add_row(*[str(x) for x in r])
    Console(width=160).print(t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000, help="tool calls to compare (default 20000)")
    ap.add_argument("--pairs", type=int, default=1000, help="random verdict pairs to compare (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="first seed (each sequence/pair has its own seed)")
    ap.add_argument("--fetch", action="store_true", help="download the nemo-gym wheel if it is not cached")
    ap.add_argument("--examples", type=int, default=1, help="examples shown per distinct divergence")
    ap.add_argument("--list-known", action="store_true", help="print the known divergences and exit")
    args = ap.parse_args(argv)

    if args.list_known:
        for k in pc.KNOWN_DIVERGENCES:
            print(f"{k['id']} [{k['class']}]\n  what: {k['what']}\n  why:  {k['why']}\n")
        return 0
    env = pc.setup(download=args.fetch)
    if env is None:
        print("reference unavailable: install pandas==2.3.2 and run with --fetch (or set OFFICEGYM_CACHE)")
        return 2
    ref, world = env

    stats = pc.Stats()
    groups: OrderedDict[str, list[pc.Divergence]] = OrderedDict()
    t0 = time.perf_counter()
    seed = args.seed
    done = 0
    while done < args.calls:
        rng = random.Random(seed)
        calls = pc.random_sequence(rng, min(args.calls - done, rng.randint(10, 40)))
        for d in pc.run_sequence(ref, world, calls, seed, stats):
            groups.setdefault(d.signature(), []).append(d)
        stats.sequences += 1
        done += len(calls)
        seed += 1
    for label, calls in pc.rollout_outputs(pc.reference_data_dir() / "data"):
        for d in pc.check_recorded(ref, world, label, calls, stats):
            groups.setdefault(d.signature(), []).append(d)
    t_calls = time.perf_counter() - t0

    t0 = time.perf_counter()
    pairs = [(label, p, g) for label, p, g in pc.example_pairs(pc.reference_data_dir() / "data")]
    pairs += [(f"regression:{label}", p, g) for label, p, g in pc.REGRESSION_PAIRS]
    for i in range(args.pairs):
        kind, p, g = pc.random_pair(random.Random(args.seed + i))
        pairs.append((f"seed {args.seed + i} ({kind})", p, g))
    for label, p, g in pairs:
        ours, theirs = pc.compare_verdict(ref, world, p, g)
        stats.pairs += 1
        if ours == theirs:
            stats.pairs_agree += 1
        else:
            d = pc.Divergence(
                "verdict", "verify", label, [p, g], f"is_correct={theirs}", f"verify_calls={ours}"
            )
            groups.setdefault(d.signature() + " " + label.split(" ")[0].split(":")[0], []).append(d)
    t_pairs = time.perf_counter() - t0

    rows = []
    for tool in sorted(stats.calls, key=lambda t: (t not in pc.TOOL_NAMES, t)):
        n, ok = stats.calls[tool], stats.agree[tool]
        rows.append([tool, n, f"{100.0 * ok / n:.2f}%", n - ok, stats.numpy_results.get(tool, 0)])
    total = sum(stats.calls.values())
    agree = sum(stats.agree.values())
    rows.append(
        [
            "TOTAL",
            total,
            f"{100.0 * agree / max(total, 1):.3f}%",
            total - agree,
            sum(stats.numpy_results.values()),
        ]
    )
    _table(
        f"Per-call output parity: {stats.sequences} sequences, {total} calls, {t_calls:.1f}s",
        ["tool", "calls", "agree", "diverged", "numpy results"],
        rows,
    )
    print(f"\nVerdict parity: {stats.pairs_agree}/{stats.pairs} pairs agree ({t_pairs:.1f}s)")

    unknown = {s: ds for s, ds in groups.items() if ds[0].known is None}
    known = {s: ds for s, ds in groups.items() if ds[0].known is not None}
    _table(
        "Distinct divergences",
        ["#", "count", "known", "signature"],
        [[i, len(ds), ds[0].known or "NO", s] for i, (s, ds) in enumerate(groups.items(), 1)],
    )
    for s, ds in list(unknown.items()) + list(known.items()):
        print("\n" + "=" * 100)
        print(f"[{len(ds)}x] {s}")
        for d in sorted(ds, key=lambda d: len(d.calls))[: args.examples]:
            print(d.report(max_calls=12))
    if stats.numpy_results:
        print(
            "\nnote: the reference returned numpy scalars for some calls; the real FastAPI route cannot serialise "
            "them (HTTP 500). They were converted to Python numbers before comparing."
        )
    bad = bool(unknown)
    print(f"\n{len(unknown)} unexplained and {len(known)} known divergence kinds; exit {int(bad)}")
    return int(bad)


if __name__ == "__main__":
    sys.exit(main())
