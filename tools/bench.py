#!/usr/bin/env python3
"""Split PMD lock benchmark: the seed series' table as ratios, measured here.

Guest mode (tools/bench) builds two kernels from the same tree and
configuration (the gate's default one) plus a benchmark-only patch that
makes CONFIG_SPLIT_PMD_PTLOCKS selectable: "split" (y) and "mm-lock" (n),
differing by that symbol alone. Boots each in the same guest shape and runs
bench/pmdbench.c in three cases, interleaved A B C A B C ... for --rounds
rounds:

  A  THP off (never), split kernel        - the seed's "THP off"
  B  THP on, mm-lock kernel               - the seed's "THP on" before the series
  C  THP on, split kernel                 - the seed's "THP on" with the series

Each boot runs the seed's fault workload (T threads fault their share of
--size bytes, each thread in its own 1 GiB regions) for every T of the
sweep, and in B and C the PMD-lock-bound walks (MADV_POPULATE_READ, mincore,
huge zero page fault + zap) with all threads in one PMD table ("same") and
each in its own ("spread"), and in C the zeroing bound (clearing 2 MiB
blocks).

Host mode (tools/bench --host) runs bench/pmdbench.c on this machine's
running kernel, userspace only: nothing is loaded into it, and no root,
QEMU, kernel tree or cache is needed. With split PMD locks, threads whose
THPs sit in one PMD table share one lock, the mm-wide lock's situation for
these paths; a table per thread is the split lock's. Every round runs, for
each T of the sweep, the fault workload in one table and spread (and with
THP off) and the walks in one table and spread, in an order that flips
every round, then the zeroing bound.

Statistics, both modes: every ratio is paired per round (both sides from the
same round) and summarised by the median of the per-round ratios with an
exact 95% confidence interval (gatelib/stats.py). Round 1 follows idle and
is the warm-up: reported apart, never in the statistics. A ratio whose
interval holds 1.0 prints as 'no effect measurable', one with fewer than 6
measured rounds as 'too few rounds'. The table puts the seed's two ratios,
the guest's and the host's side by side (the other mode's stored results
come from --compare). Writes table.txt, results.json and plot.svg (host:
the ratios with their intervals; guest: wall time against T, the intervals
in ratios.svg) to --out. Not a test: nothing here passes or fails on a
number.
"""

import argparse
import gzip
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gatelib import common, stats  # noqa: E402
from gatelib.common import GateError, say  # noqa: E402
from gatelib.trees import DEFAULT_TREE  # noqa: E402

BENCH = os.path.join(common.REPO, "bench")
SOURCE = os.path.join(BENCH, "pmdbench.c")
PATCH = os.path.join(BENCH, "0001-mm-make-SPLIT_PMD_PTLOCKS-selectable-benchmark-only.patch")
SEED = {"mm-lock/split": 49.85 / 33.90, "thp-off/split": 36.54 / 33.90}
CASES = [("A", "split", "never", "THP off"),
         ("B", "mm-lock", "always", "THP on, mm-wide PMD lock"),
         ("C", "split", "always", "THP on, split PMD locks")]
WALKS = ["populate", "mincore", "zero"]
WALK_NAMES = {"populate": "MADV_POPULATE_READ", "mincore": "mincore",
              "zero": "zero-page fault + DONTNEED"}
WARMUP = 1          # the first round after idle: reported apart, never in the statistics

# The other mode's stored results, for the side-by-side table.
GUEST_DOC = os.path.join(common.REPO, "docs", "bench", "results.json")
HOST_DOC = os.path.join(common.REPO, "docs", "bench", "host", "results.json")

# Options of one mode only (default None here, so that giving one to the
# other mode is caught), with their real defaults.
GUEST_ONLY: Dict[str, Any] = {"vcpus": 2, "mem": "", "accel": "tcg", "timeout": 1800, "cache": None, "jobs": 0,
              "no_install": False, "iters": 20000, "tree": DEFAULT_TREE}
HOST_ONLY: Dict[str, Any] = {"walk_s": 0.25}
ROUNDS = {"guest": 7, "host": 16}   # a warm-up plus 6 (the fewest for a 95% interval) / 15


def size_arg(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower()
    try:
        n = int(t[:-1]) * units[t[-1]] if t and t[-1] in units else int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text}") from None
    if n < (4 << 20):
        raise argparse.ArgumentTypeError(f"size {text} is below 4m")
    return n


def seconds_arg(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text}") from None
    if not 0.001 <= v <= 60:
        raise argparse.ArgumentTypeError(f"{text} s is outside 0.001-60")
    return v


def host_cpus() -> int:
    """The CPUs this process may run on (a cpuset may hold fewer than the machine)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def parse_args(argv):
    ap = common.OneLineParser(prog="tools/bench", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", action="store_true",
                    help="run on this machine's running kernel (userspace only) instead of guests")
    ap.add_argument("--out", default="bench-results", metavar="DIR",
                    help="results folder (default %(default)s)")
    ap.add_argument("--rounds", type=int,
                    help=f"interleaved rounds, the first a warm-up (default {ROUNDS['guest']}, "
                         f"--host {ROUNDS['host']})")
    ap.add_argument("--size", type=size_arg, default=size_arg("1g"),
                    help="bytes the fault workload faults per run (default 1g)")
    ap.add_argument("--sweep", default="",
                    help="thread counts, comma-separated (default 1,2,4,... up to 4 x CPUs)")
    ap.add_argument("--compare", metavar="FILE",
                    help="the other mode's results.json for the side-by-side table (default: "
                         "docs/bench/results.json with --host, docs/bench/host/results.json "
                         "without)")
    g = ap.add_argument_group("guest mode only")
    g.add_argument("--vcpus", type=int, help="guest vCPUs (default 2)")
    g.add_argument("--iters", type=int, help="walk iterations per thread (default 20000)")
    g.add_argument("--mem", help="guest memory (default: 2 x size + 1G)")
    common.add_shared_options(g, "--accel", "--timeout", "--cache", "--jobs", "--no-install",
                              "--tree", unset=True, timeout=GUEST_ONLY["timeout"])
    h = ap.add_argument_group("host mode only")
    h.add_argument("--walk-s", type=seconds_arg, metavar="S",
                   help="seconds each walk run lasts (default 0.25)")
    args = ap.parse_args(argv)
    mine: Dict[str, Any]
    theirs: Dict[str, Any]
    mine, theirs = (HOST_ONLY, GUEST_ONLY) if args.host else (GUEST_ONLY, HOST_ONLY)
    for name in theirs:
        if getattr(args, name) is not None:
            ap.error(f"--{name.replace('_', '-')} is for "
                     f"{'guest runs, not --host' if args.host else '--host runs'}")
    for name, default in mine.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    args.mode = "host" if args.host else "guest"
    if args.rounds is None:
        args.rounds = ROUNDS[args.mode]
    if args.rounds < 1 or (not args.host and (args.vcpus < 1 or args.iters < 1)):
        ap.error("--rounds, --vcpus and --iters must be at least 1")
    args.cpus = host_cpus() if args.host else args.vcpus
    if args.sweep:
        try:
            args.sweep = sorted({int(x) for x in args.sweep.split(",")})
        except ValueError:
            ap.error(f"--sweep {args.sweep}: expected numbers like 1,2,4")
        if args.sweep[0] < 1 or args.sweep[-1] > 1024:
            ap.error("--sweep: thread counts run from 1 to 1024")
    else:
        args.sweep, t = [], 1
        while t <= 4 * args.cpus:
            args.sweep.append(t)
            t *= 2
    # Every thread faults at least one 2 MiB chunk (pmdbench refuses less).
    if args.size < args.sweep[-1] * (2 << 20):
        ap.error(f"--size must give each of {args.sweep[-1]} threads 2 MiB at least")
    args.headline = min(args.sweep, key=lambda t: abs(t - args.cpus))
    if not args.host:
        args.mem = args.mem or f"{2 * args.size // (1 << 30) + 2}G"
    if args.compare is None:
        args.compare = GUEST_DOC if args.host else HOST_DOC
    elif not os.path.isfile(args.compare):
        ap.error(f"--compare {args.compare}: no such file")
    common.check_shared_options(ap, args)
    # Every bad input fails here, before the cache lock or a build: the
    # results folder must be one we can make and write in.
    why = common.output_file_problem(os.path.join(args.out, "table.txt"))
    if why:
        ap.error(f"--out {args.out}: cannot write there ({why})")
    if not args.host:
        from gatelib.cache import Cache
        try:
            args.cache = Cache(args.cache).root
        except GateError as e:
            ap.error(str(e))
    return args


# ---------------------------------------------------------------------------
# Ratios: which runs each side of a ratio is, and its statistics.

@dataclass(frozen=True)
class RatioSpec:
    """A ratio of two costs measured in every round: num / den.

    Costs are times (wall seconds, or nanoseconds per walk operation), so a
    ratio above 1 means the numerator's side (the shared lock, THP off) is
    slower. A selector's keys match a run's own fields ("case", "kind") or
    its pmdbench JSON."""
    key: str
    label: str
    threads: int
    num: dict
    den: dict
    cost: str           # "wall_s" or "ns_per_op"


@dataclass
class RatioResult:
    key: str
    label: str
    threads: int
    unit: str
    num_median: float | None    # over the measured rounds (the warm-up when there are none)
    den_median: float | None
    warmup: float | None        # round 1's ratio, reported apart
    rounds: dict[int, float]    # the paired ratio of every round, warm-up included
    interval: stats.Interval

    @property
    def point(self) -> float | None:
        """The JSON's single number: the measured rounds' median, else the warm-up's."""
        return self.interval.median if self.interval.n else self.warmup

    def as_dict(self) -> dict:
        d = asdict(self)
        d["interval"] = self.interval.as_dict()
        d["point"] = self.point
        return d


def matches(run: dict, sel: dict) -> bool:
    return all((run.get(k) if k in ("case", "kind") else run["data"].get(k)) == v
               for k, v in sel.items())


def cost(data: dict, what: str) -> float:
    if what == "ns_per_op":
        return 1e9 / data["ops_per_s"] if data.get("ops_per_s") else float("nan")
    return data[what]


def per_round(runs: list[dict], sel: dict, what: str) -> dict[int, float]:
    """Round -> the selected run's cost (one run per round and selector)."""
    out: dict[int, list[float]] = {}
    for r in runs:
        if matches(r, sel):
            out.setdefault(r["round"], []).append(cost(r["data"], what))
    return {rnd: statistics.median(v) for rnd, v in out.items()}


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def measured(by_round: dict[int, float]) -> list[float]:
    """The values the statistics use: every round after the warm-up."""
    return [v for rnd, v in sorted(by_round.items()) if rnd > WARMUP]


def described(by_round: dict[int, float]) -> list[float]:
    """The values medians describe: the measured rounds, or the warm-up when
    it is all there is (a one-round smoke run still prints its numbers)."""
    return measured(by_round) or [v for rnd, v in by_round.items() if rnd <= WARMUP]


def measure(spec: RatioSpec, runs: list[dict]) -> RatioResult:
    num = per_round(runs, spec.num, spec.cost)
    den = per_round(runs, spec.den, spec.cost)
    pairs = stats.paired_ratios(num, den)
    return RatioResult(key=spec.key, label=spec.label, threads=spec.threads,
                       unit="s" if spec.cost == "wall_s" else "ns/op",
                       num_median=med(described(num)) if num else None,
                       den_median=med(described(den)) if den else None,
                       warmup=pairs.get(WARMUP), rounds=pairs,
                       interval=stats.median_interval(measured(pairs)))


def guest_specs(headline: int, sweep: list[int]) -> list[RatioSpec]:
    def fault(case, t):
        return {"case": case, "kind": "fault", "threads": t}

    def walk(case, w, layout):
        return {"case": case, "kind": "walk", "workload": w, "layout": layout}

    h = headline
    specs = [RatioSpec("mm-lock/split", "B/C (mm-lock / split)", h, fault("B", h), fault("C", h),
                       "wall_s"),
             RatioSpec("thp-off/split", "A/C (THP off / split)", h, fault("A", h), fault("C", h),
                       "wall_s")]
    specs += [RatioSpec(f"sweep/T{t}", f"B/C at T = {t}", t, fault("B", t), fault("C", t), "wall_s")
              for t in sweep]
    for w in WALKS:
        for letter, kernel in (("B", "mm-lock"), ("C", "split")):
            specs.append(RatioSpec(f"walk/{w}/{letter}", f"{w} ({kernel}): one table / own", h,
                                   walk(letter, w, "same"), walk(letter, w, "spread"),
                                   "ns_per_op"))
    return specs


def host_specs(sweep: list[int]) -> list[RatioSpec]:
    def fault(t, layout, thp):
        return {"kind": "fault", "threads": t, "layout": layout, "thp": thp}

    def walk(w, t, layout):
        return {"kind": "walk", "workload": w, "threads": t, "layout": layout}

    specs = []
    for t in sweep:
        specs.append(RatioSpec(f"fault/T{t}", "fault: one table / own tables", t,
                               fault(t, "same", "on"), fault(t, "spread", "on"), "wall_s"))
        specs.append(RatioSpec(f"thp-off/T{t}", "fault: THP off / THP on", t,
                               fault(t, "spread", "off"), fault(t, "spread", "on"), "wall_s"))
        for w in WALKS:
            specs.append(RatioSpec(f"{w}/T{t}", f"{WALK_NAMES[w]}: one table / own tables", t,
                                   walk(w, t, "same"), walk(w, t, "spread"), "ns_per_op"))
    return specs


# ---------------------------------------------------------------------------
# The side-by-side table: the seed, the guest, the host.

# (row label, the seed's ratio, the guest's ratio key, the host's key before "/T<n>")
COMBINED = [
    ("fault workload: shared lock / split", SEED["mm-lock/split"], "mm-lock/split", "fault"),
    ("fault workload: THP off / THP on", SEED["thp-off/split"], "thp-off/split", "thp-off"),
    ("MADV_POPULATE_READ: one table / own", None, "walk/populate/C", "populate"),
    ("mincore: one table / own", None, "walk/mincore/C", "mincore"),
    ("zero-page fault + DONTNEED: one / own", None, "walk/zero/C", "zero"),
]


@dataclass
class Column:
    """One side of the side-by-side table: whose ratios, from where."""
    name: str                       # "guest" or "host"
    source: str                     # "this run" or the results file
    facts: str                      # kernel, CPUs, T, rounds
    results: dict[str, RatioResult] = field(default_factory=dict)
    missing: str = ""               # why there are no results, if there are none

    def cell(self, key: str) -> str:
        if self.missing:
            return "not measured"
        r = self.results.get(key)
        return r.interval.text() if r else "not measured"


def guest_column(doc: dict, source: str) -> Column:
    """A guest run's ratios, recomputed from its runs (results files from
    before the statistics existed hold the runs too)."""
    h = doc["summary"]["headline_threads"]
    res = {s.key: measure(s, doc["runs"]) for s in guest_specs(h, doc["sweep"])}
    return Column("guest", source, f"linux {doc['tree']}, {doc['vcpus']} vCPUs ({doc['accel']}), "
                  f"T = {h}, {doc['rounds']} rounds", res)


def host_column(doc: dict, source: str) -> Column:
    """A host run's ratios at its headline T, keyed as COMBINED names them."""
    h = doc["headline_threads"]
    res = {}
    for spec in host_specs([h]):
        res[spec.key.rsplit("/", 1)[0]] = measure(spec, doc["runs"])
    k = doc["kernel"]
    return Column("host", source, f"linux {k['release']} (split PMD locks: "
                  f"{k['split_pmd_ptlocks']}), {doc['cpus']} CPUs, T = {h}, "
                  f"{doc['rounds']} rounds", res)


def stored_column(path: str, mode: str) -> Column:
    """The other mode's results from a file, or a column saying why there are none."""
    shown = os.path.relpath(path, common.REPO) if path.startswith(common.REPO + os.sep) else path
    try:
        with open(path) as f:
            doc = json.load(f)
        return (host_column if mode == "host" else guest_column)(doc, shown)
    except FileNotFoundError:
        how = "tools/bench --host --out docs/bench/host" if mode == "host" else "tools/bench"
        return Column(mode, shown, "", missing=f"does not exist (made by {how})")
    except (OSError, ValueError, KeyError, TypeError) as e:
        return Column(mode, shown, "", missing=f"unreadable ({type(e).__name__}: {e})")


def combined_rows(guest: Column, host: Column) -> list[dict]:
    rows = []
    for label, seed, gkey, hkey in COMBINED:
        g, h = guest.results.get(gkey), host.results.get(hkey)
        rows.append({"label": label, "seed": seed,
                     "guest": g.as_dict() if g else None, "host": h.as_dict() if h else None})
    return rows


def fmt_combined(guest: Column, host: Column) -> list[str]:
    w = 40
    L = ["the seed's ratios beside this machine's (median of paired per-round ratios, 95% CI; "
         "> 1: the shared lock's side is slower)",
         f"{'ratio':<38} {'seed':>6}   {'guest':<{w}} host"]
    for label, seed, gkey, hkey in COMBINED:
        s = f"{seed:.2f}" if seed else "-"
        L.append(f"{label:<38} {s:>6}   {guest.cell(gkey):<{w}} {host.cell(hkey):<{w}}".rstrip())
    L.append("seed: the series' cover letter, thp_pthread on 80 CPUs (published single numbers)")
    for c in (guest, host):
        L.append(f"{c.name}: {c.source}: {c.missing or c.facts}")
    L += ["compared: guest, the mm-lock kernel / the split kernel (fault workload) and the "
          "split kernel's one table / own tables (walks);",
          "          host, one PMD table / a table per thread on the running kernel throughout"]
    return L


# ---------------------------------------------------------------------------
# Guest mode.

def build_kernels(src, cache, jobs):
    """Both kernels, each checked to have the SPLIT_PMD_PTLOCKS it asked for."""
    from gatelib import kbuild
    out = {}
    for name in ("split", "mm-lock"):
        # The gate's default kernel (KUnit built in, kept off at boot by
        # kunit.enable=0) plus one symbol: the split kernel then shares
        # nearly every object with the gate's default build in ccache.
        frags = common.config_fragments("default", src.family) + [os.path.join(BENCH, f"{name}.config")]
        out[name] = kbuild.build(src.path, frags,
                                 cache.bench_build(src.version, name),
                                 cache.logs(src.version, f"bench-{name}"), cache, jobs)
    if (out["split"].facts["SPLIT_PMD_PTLOCKS"] != "y"
            or out["mm-lock"].facts["SPLIT_PMD_PTLOCKS"] != "n"):
        raise GateError("the two benchmark kernels do not differ in SPLIT_PMD_PTLOCKS")
    return out


def script(args, binary, case):
    """The guest's run: warm-up, the fault sweep, and walks / zeroing per case."""
    _, kernel, thp, _ = case
    h = "off" if thp == "never" else "on"
    # Warm-up at the full size: the guest's RAM is fresh at every boot and its
    # first touch costs host page faults, which must not land in the sweep.
    lines = ["set -eu -o pipefail", f"B={binary}",
             f"$B -w fault -t {args.headline} -b {args.size} -l spread -H {h} > /dev/null"]
    for t in args.sweep:
        lines.append(f"$B -w fault -t {t} -b {args.size} -l spread -H {h} -r 1 | sed 's/^/fault /'")
    if thp == "always":
        for w in WALKS:
            for layout in ("same", "spread"):
                lines.append(f"$B -w {w} -t {args.headline} -l {layout} -n {args.iters} "
                             f"| sed 's/^/walk /'")
    if case[0] == "C":
        lines.append("$B -w clear -b 256m -r 8 | sed 's/^/clear /'")
    return "\n".join(lines) + "\n"


def compile_bench(directory: str) -> str:
    """pmdbench with the host's gcc into directory (guest: the cache, which the
    guest sees; host: a temporary directory)."""
    os.makedirs(directory, exist_ok=True)
    binary = os.path.join(directory, "pmdbench")
    try:
        r = subprocess.run(["gcc", "-O2", "-Wall", "-pthread", "-o", binary, SOURCE],
                           capture_output=True, text=True)
    except FileNotFoundError:
        raise GateError("gcc not found: pmdbench is compiled on this machine") from None
    if r.returncode:
        raise GateError(f"pmdbench does not compile: {r.stderr.strip().splitlines()[0]}")
    return binary


def stat_rounds_text(rounds: int) -> str:
    if rounds <= WARMUP:
        return f"{rounds} round: the warm-up only, no statistics"
    kept = "round 2" if rounds == WARMUP + 1 else f"rounds 2-{rounds}"
    return (f"{rounds} rounds interleaved, round 1 the warm-up (reported apart), "
            f"{kept} in the statistics")


def summarise(args, runs):
    """Medians and spreads per case, the ratios with intervals, the sweep and the walks."""
    def pick(case, kind, **kw):
        return [r for r in runs if r["case"] == case and r["kind"] == kind
                and all(r["data"].get(k) == v for k, v in kw.items())]

    def kept(rs):
        # The measured rounds, or the warm-up when it is all there is.
        return [r for r in rs if r["round"] > WARMUP] or rs

    s = {"headline_threads": args.headline, "warmup_round": WARMUP, "cases": {}, "sweep": {},
         "walks": {}}
    for letter, _, _, label in CASES:
        rs = [r["data"] for r in kept(pick(letter, "fault", threads=args.headline))]
        s["cases"][letter] = {
            "label": label, "n": len(rs),
            **{k: {"median": med([r[k] for r in rs]), "min": min((r[k] for r in rs), default=None),
                   "max": max((r[k] for r in rs), default=None)}
               for k in ("wall_s", "faults", "faults_per_s")}}
        s["sweep"][letter] = {t: med([r["data"]["wall_s"]
                                      for r in kept(pick(letter, "fault", threads=t))])
                              for t in args.sweep}
    results = {spec.key: measure(spec, runs) for spec in guest_specs(args.headline, args.sweep)}
    s["ratio_results"] = {k: r.as_dict() for k, r in results.items()}
    s["ratios"] = {"mm-lock/split": results["mm-lock/split"].point,
                   "thp-off/split": results["thp-off/split"].point, "seed": SEED}
    clear = [r["data"]["bytes_per_s"] for r in kept([r for r in runs if r["kind"] == "clear"])]
    c_rs = [r["data"] for r in kept(pick("C", "fault", threads=args.headline))]
    thp_bytes_per_s = med([r["thp_fault_alloc"] * (2 << 20) / r["wall_s"] for r in c_rs])
    s["zeroing"] = {"clear_bytes_per_s": med(clear), "thp_fault_bytes_per_s": thp_bytes_per_s,
                    "fraction": thp_bytes_per_s / med(clear) if clear else None}
    for letter in "BC":
        for w in WALKS:
            per = {lay: med([r["data"]["ops_per_s"]
                             for r in kept(pick(letter, "walk", workload=w, layout=lay))])
                   for lay in ("same", "spread")}
            per["spread/same"] = results[f"walk/{w}/{letter}"].interval.as_dict()
            s["walks"].setdefault(w, {})[letter] = per
    return s, results


def warmup_text(r: RatioResult) -> str:
    return stats.fmt(r.warmup) if r.warmup is not None else "-"


def fmt_table(args, s, results, facts, columns):
    L = [f"split PMD lock benchmark: linux {facts['tree']}, {args.vcpus} vCPUs ({args.accel}), "
         f"{args.rounds} rounds interleaved A B C, fault size {args.size >> 20} MiB, "
         f"T = {args.headline} for the case table",
         f"rounds: {stat_rounds_text(args.rounds)}",
         f"statistics: {stats.METHOD}",
         "", f"{'case':<30} {'wall s median (min-max)':<28} {'faults median (min-max)':<28} "
             f"{'faults/s median (min-max)':<30}"]
    for letter, _, _, label in CASES:
        c = s["cases"][letter]

        def cell(k, f):
            v = c[k]
            if v["min"] is None:
                return "n/a"
            return f"{f(v['median'])} ({f(v['min'])}-{f(v['max'])})"
        L.append(f"{letter} {label:<28} {cell('wall_s', lambda x: f'{x:.3f}'):<28} "
                 f"{cell('faults', lambda x: f'{x:.0f}'):<28} {cell('faults_per_s', lambda x: f'{x:.0f}'):<30}")
    bc, ac = results["mm-lock/split"], results["thp-off/split"]
    L += ["", f"ratio B/C (mm-lock / split):  {bc.interval.text():<42} seed: {SEED['mm-lock/split']:.2f}"
              f"   warm-up round: {warmup_text(bc)}",
          f"ratio A/C (THP off / split):  {ac.interval.text():<42} seed: {SEED['thp-off/split']:.2f}"
          f"   warm-up round: {warmup_text(ac)}"]
    z = s["zeroing"]
    if z["fraction"] is not None:
        L.append(f"zeroing bound: clearing 2 MiB blocks runs at {z['clear_bytes_per_s'] / 1e9:.2f} GB/s; "
                 f"THP faults in C deliver {z['thp_fault_bytes_per_s'] / 1e9:.2f} GB/s "
                 f"= {100 * z['fraction']:.0f} % of it")
    L += ["", "thread sweep (median wall s of the fault workload; B/C paired per round):",
          f"{'T':>4} " + " ".join(f"{c:>10}" for c in "ABC") + f"   {'B/C':<42} warm-up"]
    for t in args.sweep:
        row = [s["sweep"][c][t] for c in "ABC"]
        r = results[f"sweep/T{t}"]
        L.append(f"{t:>4} " + " ".join(f"{v:>10.3f}" for v in row)
                 + f"   {r.interval.text():<42} {warmup_text(r)}")
    L += ["", f"PMD-lock-bound walks at T = {args.headline} (median ops/s; same = one PMD table, "
              f"spread = a table per thread; spread/same paired per round):",
          f"{'walk':<10} {'kernel':<8} {'same':>12} {'spread':>12}   {'spread/same':<42} warm-up"]
    for w in WALKS:
        for letter, name in (("B", "mm-lock"), ("C", "split")):
            p = s["walks"][w][letter]
            r = results[f"walk/{w}/{letter}"]
            L.append(f"{w:<10} {name:<8} {p['same']:>12.0f} {p['spread']:>12.0f}   "
                     f"{r.interval.text():<42} {warmup_text(r)}")
    L += [""] + fmt_combined(*columns)
    return "\n".join(L)


def svg_plot(args, s):
    """Median wall time of the fault workload against T for A, B, C."""
    W, H, m = 640, 400, 60
    ts = args.sweep
    vals = [s["sweep"][c][t] for c in "ABC" for t in ts]
    top = max(v for v in vals if v == v) * 1.1 or 1

    def x(i):
        return m + (W - 2 * m) * (i / max(1, len(ts) - 1))

    def y(v):
        return H - m - (H - 2 * m) * v / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<text x="{W / 2}" y="20" text-anchor="middle">fault workload, {args.size >> 20} MiB, '
           f'{args.vcpus} vCPUs ({args.accel}): median wall time vs threads</text>',
           f'<line x1="{m}" y1="{H - m}" x2="{W - m}" y2="{H - m}" stroke="black"/>',
           f'<line x1="{m}" y1="{m}" x2="{m}" y2="{H - m}" stroke="black"/>']
    for i, t in enumerate(ts):
        out.append(f'<text x="{x(i)}" y="{H - m + 16}" text-anchor="middle">{t}</text>')
    for k in range(5):
        v = top * k / 4
        out.append(f'<text x="{m - 6}" y="{y(v) + 4}" text-anchor="end">{v:.2f}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 15}" text-anchor="middle">threads</text>')
    out.append(f'<text x="15" y="{H / 2}" transform="rotate(-90 15 {H / 2})" text-anchor="middle">seconds</text>')
    colours = {"A": "#1b9e77", "B": "#d95f02", "C": "#7570b3"}
    for j, (letter, _, _, label) in enumerate(CASES):
        pts = " ".join(f"{x(i):.1f},{y(s['sweep'][letter][t]):.1f}" for i, t in enumerate(ts))
        out.append(f'<polyline fill="none" stroke="{colours[letter]}" stroke-width="2" points="{pts}"/>')
        out.append(f'<text x="{W - m - 200}" y="{m + 16 * j}" fill="{colours[letter]}">{letter}: {label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main_guest(args):
    from gatelib import console, guest, kbuild, series, tree
    from gatelib.cache import open_locked
    start = time.monotonic()
    try:
        cache = open_locked(args.cache, args.no_install)
        src = tree.prepare(cache, tree.find_tarball(install=not args.no_install,
                                                    tree_name=args.tree))
        version = src.version
        # The series plus the benchmark-only patch (kept apart from the series).
        tree.apply_series(src.path, version,
                          tree.series_files(series.patch_dir(args.tree)) + [PATCH])
        jobs = kbuild.jobs(args.jobs)
        kernels = build_kernels(src, cache, jobs)
        os.makedirs(args.out, exist_ok=True)
        # Into the cache: the guest sees the host's / but has its own /tmp.
        binary = compile_bench(cache.bench_build(version, "pmdbench"))
        st_build = kernels["split"].build
        runs, consoles = [], []
        for rnd in range(1, args.rounds + 1):
            for case in CASES:
                letter, kname, thp, _ = case
                kb = kernels[kname]
                kernel, log_dir = kb.bzimage, kb.log_dir
                say(f"bench: round {rnd}/{args.rounds}{' (warm-up)' if rnd == WARMUP else ''}, "
                    f"case {letter} ({kname}, THP {thp})")
                status, output, cons, secs, hung = guest.run_script(
                    src.path, st_build, kernel, log_dir, script(args, binary, case), accel=args.accel,
                    smp=args.vcpus, timeout=args.timeout, mem=args.mem, thp=thp)
                if hung or status != 0:
                    raise GateError(f"case {letter} round {rnd}: "
                                    f"{hung or f'the workload exited {status}'}: "
                                    f"{output.strip().splitlines()[-1] if output.strip() else 'no output'}"
                                    f" (log: {log_dir}/guest-console.log)")
                consoles += [r for r in console.results(cons, f"{letter} console")
                             if r.status == "fail"]
                for line in output.splitlines():
                    kind, _, js = line.partition(" ")
                    if kind in ("fault", "walk", "clear") and js.startswith("{"):
                        try:
                            data = json.loads(js)
                        except ValueError as e:
                            raise GateError(f"case {letter} round {rnd}: unreadable result "
                                            f"({e}): {js}") from None
                        runs.append({"round": rnd, "case": letter, "kind": kind, "data": data})
        if consoles:
            raise GateError(f"a benchmark guest reported a kernel problem: {consoles[0]}")
        want = args.rounds * len(CASES) * len(args.sweep)
        got = sum(r["kind"] == "fault" for r in runs)
        if got != want:
            raise GateError(f"{got} fault runs parsed, {want} expected (see the guest logs under "
                            f"{cache.logs(version)}/bench-*)")
    except GateError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    s, results = summarise(args, runs)
    facts = {"mode": "guest", "tree": version, "vcpus": args.vcpus, "accel": args.accel,
             "size": args.size, "rounds": args.rounds, "warmup_round": WARMUP,
             "sweep": args.sweep, "iters": args.iters, "method": stats.METHOD,
             "kernels": {k: v.facts for k, v in kernels.items()}}
    doc = {**facts, "summary": s, "runs": runs}
    this = guest_column(doc, "this run")
    other = stored_column(args.compare, "host")
    doc["combined"] = combined_rows(this, other)
    text = fmt_table(args, s, results, facts, (this, other))
    write_outputs(args.out, text, doc, {"plot.svg": svg_plot(args, s),
                                        "ratios.svg": svg_forest(
                                            "guest ratios with 95% intervals",
                                            forest_rows(this, other, guest_detail_rows(results)))})
    say(f"bench: {int(time.monotonic() - start)} s; table.txt, results.json, plot.svg, ratios.svg "
        f"in {args.out}")
    return 0


def guest_detail_rows(results: dict[str, RatioResult]) -> list["PlotRow"]:
    rows = [PlotRow("guest, by threads: B/C (mm-lock / split)", heading=True)]
    rows += [PlotRow(r.label, r.interval) for k, r in results.items() if k.startswith("sweep/")]
    rows.append(PlotRow("guest walks at T = its vCPUs", heading=True))
    rows += [PlotRow(r.label, r.interval) for k, r in results.items() if k.startswith("walk/")]
    return rows


def write_results(path: str, doc: dict) -> None:
    """The results document with one line per run (hundreds of runs, each a
    dozen fields: indented, a run would take a screen), the rest indented."""
    runs = doc.get("runs")
    head = json.dumps({k: v for k, v in doc.items() if k != "runs"}, indent=2)
    with open(path, "w") as f:
        if runs is None:
            f.write(head + "\n")
            return
        f.write(head[:-2] + ',\n  "runs": [\n')
        f.write(",\n".join("    " + json.dumps(r, separators=(", ", ": ")) for r in runs))
        f.write("\n  ]\n}\n")


def write_outputs(out: str, text: str, doc: dict, svgs: dict[str, str]) -> None:
    print(text)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(text + "\n")
    write_results(os.path.join(out, "results.json"), doc)
    for name, svg in svgs.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(svg)


# ---------------------------------------------------------------------------
# Host mode.

@dataclass
class KernelFacts:
    release: str
    machine: str
    split_pmd_ptlocks: str          # "y", "n" or "unknown"
    config_source: str | None       # where that was read, None if nowhere
    tried: list[str]
    thp_enabled: str                # the bracketed choice of .../transparent_hugepage/enabled
    thp_defrag: str
    huge_zero_page: str             # "on", "off" or "unknown"

    def split_line(self) -> str:
        if self.split_pmd_ptlocks == "y":
            return f"split PMD locks: yes (CONFIG_SPLIT_PMD_PTLOCKS=y in {self.config_source})"
        if self.split_pmd_ptlocks == "n":
            return (f"split PMD locks: no (CONFIG_SPLIT_PMD_PTLOCKS not set in "
                    f"{self.config_source}): one table and spread take the same mm-wide lock")
        return (f"split PMD locks: unknown (no readable kernel config: {', '.join(self.tried)}); "
                f"the ratios below cannot say which lock they measure")


def read_config(path: str) -> str | None:
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rt", errors="replace") as f:
                return f.read()
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:     # missing, unreadable, or not gzip after all
        return None


def split_from_config(text: str) -> str:
    """y or n: a config that does not set the symbol (an architecture without
    ARCH_ENABLE_SPLIT_PMD_PTLOCK never offers it) has the mm-wide lock."""
    for line in text.splitlines():
        if line.startswith("CONFIG_SPLIT_PMD_PTLOCKS="):
            return "y" if line.split("=", 1)[1].strip() == "y" else "n"
    return "n"


def sysfs_choice(path: str) -> str:
    """The [bracketed] choice of a THP sysfs file, or the file's text, or 'unknown'."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return "unknown"
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text


def kernel_facts() -> KernelFacts:
    u = os.uname()
    tried = ["/proc/config.gz", f"/boot/config-{u.release}"]
    split, source = "unknown", None
    for path in tried:
        text = read_config(path)
        if text and "CONFIG_" in text:
            split, source = split_from_config(text), path
            break
    thp = "/sys/kernel/mm/transparent_hugepage"
    zero = sysfs_choice(os.path.join(thp, "use_zero_page"))
    return KernelFacts(release=u.release, machine=u.machine, split_pmd_ptlocks=split,
                       config_source=source, tried=tried,
                       thp_enabled=sysfs_choice(os.path.join(thp, "enabled")),
                       thp_defrag=sysfs_choice(os.path.join(thp, "defrag")),
                       huge_zero_page={"1": "on", "0": "off"}.get(zero, "unknown"))


def mem_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


@dataclass(frozen=True)
class HostRun:
    """One pmdbench run of a host round."""
    kind: str           # fault, walk, clear
    workload: str
    threads: int
    layout: str = "spread"
    thp: str = "on"

    def argv(self, binary: str, args) -> list[str]:
        if self.kind == "clear":
            return [binary, "-w", "clear", "-b", str(min(args.size, 256 << 20)), "-r", "4"]
        cmd = [binary, "-w", self.workload, "-t", str(self.threads), "-l", self.layout]
        if self.kind == "fault":
            # -W: an untimed pass first, so neither side pays for compacting
            # memory into 2 MiB blocks (a memory-state cost, not a lock's).
            return cmd + ["-b", str(args.size), "-H", self.thp, "-W"]
        return cmd + ["-d", f"{args.walk_s:g}"]


def host_round(args, rnd: int) -> list[HostRun]:
    """One round's runs. Each ratio's two sides run back to back, and the
    order flips every round so neither side always runs first (or last,
    after the most memory churn)."""
    plan = []
    for t in args.sweep:
        plan += [HostRun("fault", "fault", t, "same"), HostRun("fault", "fault", t, "spread"),
                 HostRun("fault", "fault", t, "spread", "off")]
        for w in WALKS:
            plan += [HostRun("walk", w, t, "same"), HostRun("walk", w, t, "spread")]
    plan.append(HostRun("clear", "clear", 1))
    return plan if rnd % 2 else plan[::-1]


def run_pmdbench(binary: str, run: HostRun, args) -> dict:
    argv = run.argv(binary, args)
    what = " ".join(argv[1:])
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise GateError(f"pmdbench {what}: no end after 600 s") from None
    if r.returncode:
        last = r.stderr.strip().splitlines()[-1:] or ["no output"]
        hint = " (THP allocation fell short: memory fragmented?)" if r.returncode == 3 else ""
        raise GateError(f"pmdbench {what} exited {r.returncode}: {last[0]}{hint}")
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise GateError(f"pmdbench {what}: no JSON line in its output") from None


def host_checks(args, k: KernelFacts) -> None:
    if k.thp_enabled == "never":
        raise GateError("THP is off on this kernel (transparent_hugepage/enabled is never): "
                        "the workloads need THPs")
    avail = mem_available()
    if avail is not None and 2 * args.size > avail:
        raise GateError(f"--size {args.size >> 20} MiB: this machine has "
                        f"{avail >> 20} MiB available, twice the size is needed")


def host_zeroing(runs: list[dict]) -> dict:
    """What clearing 2 MiB costs one CPU against what one thread's THP faults deliver."""
    clear = per_round(runs, {"kind": "clear"}, "bytes_per_s")
    fault = per_round(runs, {"kind": "fault", "threads": 1, "layout": "spread", "thp": "on"},
                      "bytes_per_s")
    c, f = med(described(clear)), med(described(fault))
    return {"clear_bytes_per_s": c, "thp_fault_bytes_per_s_t1": f,
            "fraction": f / c if c == c and f == f and c > 0 else None}


def fmt_host(args, k: KernelFacts, results: list[RatioResult], zeroing: dict,
             columns: tuple[Column, Column]) -> str:
    w = max(len(r.label) for r in results)
    L = ["split PMD lock benchmark on this machine's running kernel (userspace only: "
         "nothing loaded into it)",
         f"kernel: {k.release} ({k.machine}), {args.cpus} CPUs",
         k.split_line(),
         f"THP: enabled {k.thp_enabled}, defrag {k.thp_defrag}, huge zero page {k.huge_zero_page}",
         f"rounds: {stat_rounds_text(args.rounds)}; fault size {args.size >> 20} MiB, walks "
         f"{args.walk_s:g} s each, T = {','.join(map(str, args.sweep))}",
         f"statistics: {stats.METHOD}",
         "",
         "ratios X / Y by threads (> 1: one PMD table, or THP off, is slower; X and Y are "
         "medians over the measured rounds):",
         f"{'ratio X / Y':<{w}} {'T':>3} {'X':>9} {'Y':>9} {'unit':<5} {'warm-up':>7}   "
         f"median of paired ratios (95% CI)"]
    for r in results:
        L.append(f"{r.label:<{w}} {r.threads:>3} {num_text(r.num_median):>9} "
                 f"{num_text(r.den_median):>9} {r.unit:<5} {warmup_text(r):>7}   "
                 f"{r.interval.text()}")
    if zeroing["fraction"] is not None:
        L += ["", f"zeroing bound: clearing 2 MiB blocks runs at "
                  f"{zeroing['clear_bytes_per_s'] / 1e9:.2f} GB/s on one CPU; one thread's THP "
                  f"faults deliver {zeroing['thp_fault_bytes_per_s_t1'] / 1e9:.2f} GB/s = "
                  f"{100 * zeroing['fraction']:.0f} % of it"]
    L += [""] + fmt_combined(*columns)
    return "\n".join(L)


def num_text(v: float | None) -> str:
    if v is None or v != v:
        return "-"
    return f"{v:.3f}" if v < 100 else f"{v:.0f}"


def host_rows(results: list[RatioResult]) -> list["PlotRow"]:
    """The host's ratios grouped by what they compare, one row per T."""
    by_label: dict[str, list[RatioResult]] = {}
    for r in results:
        by_label.setdefault(r.label, []).append(r)
    out = []
    for label, rs in by_label.items():
        out.append(PlotRow(f"host, by threads: {label}", heading=True))
        out += [PlotRow(f"T = {r.threads}", r.interval) for r in rs]
    return out


def main_host(args):
    start = time.monotonic()
    k = kernel_facts()
    runs: list[dict] = []
    try:
        host_checks(args, k)
        with tempfile.TemporaryDirectory(prefix="pmdbench-") as tmp:
            binary = compile_bench(tmp)
            for rnd in range(1, args.rounds + 1):
                say(f"bench: round {rnd}/{args.rounds}{' (warm-up)' if rnd == WARMUP else ''}")
                for run in host_round(args, rnd):
                    runs.append({"round": rnd, "kind": run.kind,
                                 "data": run_pmdbench(binary, run, args)})
    except GateError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    text, doc, svg = host_outputs(args, k, runs)
    write_outputs(args.out, text, doc, {"plot.svg": svg})
    say(f"bench: {int(time.monotonic() - start)} s; table.txt, results.json, plot.svg in {args.out}")
    return 0


def host_outputs(args, k: KernelFacts, runs: list[dict]) -> tuple[str, dict, str]:
    """The table, the results document and the plot of a host run's runs."""
    results = [measure(spec, runs) for spec in host_specs(args.sweep)]
    doc = {"mode": "host", "kernel": asdict(k), "cpus": args.cpus, "sweep": args.sweep,
           "headline_threads": args.headline, "rounds": args.rounds, "warmup_round": WARMUP,
           "size": args.size, "walk_s": args.walk_s, "method": stats.METHOD,
           "ratios": [r.as_dict() for r in results], "zeroing": host_zeroing(runs), "runs": runs}
    this = host_column(doc, "this run")
    other = stored_column(args.compare, "guest")
    doc["combined"] = combined_rows(other, this)
    text = fmt_host(args, k, results, doc["zeroing"], (other, this))
    svg = svg_forest(f"split PMD lock: ratios with 95% intervals (host {k.release}, "
                     f"{args.cpus} CPUs)", forest_rows(other, this, host_rows(results)))
    return text, doc, svg


# ---------------------------------------------------------------------------
# The forest plot: every ratio as its interval on a log axis, 1.0 marked.

@dataclass
class PlotRow:
    label: str
    interval: stats.Interval | None = None
    point: float | None = None      # a published number without interval (the seed's)
    heading: bool = False           # a group's title, left-aligned, no marks


def forest_rows(guest: Column, host: Column, detail: list[PlotRow]) -> list[PlotRow]:
    """The side-by-side table's rows (seed, guest, host under each ratio), then detail."""
    rows = []
    for label, seed, gkey, hkey in COMBINED:
        rows.append(PlotRow(label, heading=True))
        if seed:
            rows.append(PlotRow("seed (80 CPUs)", point=seed))
        for col, key in ((guest, gkey), (host, hkey)):
            r = col.results.get(key)
            if r:
                rows.append(PlotRow(f"{col.name} ({col.source})", r.interval))
    return rows + detail


def log_axis(values: list[float]) -> tuple[float, float, list[float]]:
    """The axis's ends and ticks: a narrow range gets close ticks, a wide one
    runs from power of two to power of two with a tick at each."""
    lo, hi = min(values) / 1.1, max(values) * 1.1
    if hi / lo > 3:
        e0, e1 = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
        return 2.0 ** e0, 2.0 ** e1, [2.0 ** e for e in range(e0, e1 + 1)]
    nice = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0]
    return lo, hi, [t for t in nice if lo <= t <= hi]


def svg_forest(title: str, rows: list[PlotRow]) -> str:
    """Each interval a bar with its median (black: an effect; grey, no median
    drawn: no effect measurable), the seed's numbers as diamonds, rows with
    too few rounds said in words."""
    values = [1.0]
    for r in rows:
        if r.point:
            values.append(r.point)
        if r.interval and r.interval.lo is not None and r.interval.hi is not None:
            values += [r.interval.lo, r.interval.hi]
    lo, hi, ticks = log_axis([v for v in values if v and v > 0 and v == v])
    W, left, right, top, step = 980, 330, 640, 50, 18
    H = top + step * len(rows) + 50

    def x(v: float) -> float:
        return left + (right - left) * (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="13">{esc(title)}</text>',
           f'<text x="{W / 2}" y="36" text-anchor="middle">median of paired per-round ratios, '
           f'exact 95% CI; log scale; &gt; 1: the shared lock (or THP off) is slower</text>']
    bottom = top + step * len(rows)
    for t in ticks:
        dash = "" if t == 1.0 else ' stroke-dasharray="2,3"'
        colour = "black" if t == 1.0 else "#bbb"
        out.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{bottom}" '
                   f'stroke="{colour}"{dash}/>')
        out.append(f'<text x="{x(t):.1f}" y="{bottom + 14}" text-anchor="middle">{t:g}</text>')
    for i, r in enumerate(rows):
        y = top + step * i + step / 2
        if r.heading:
            out.append(f'<text x="10" y="{y + 4:.1f}" font-weight="bold">{esc(r.label)}</text>')
        else:
            out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">'
                       f'{esc(r.label)}</text>')
        out += forest_marks(r, y, x, right)
    out.append(f'<text x="{W / 2}" y="{bottom + 36}" text-anchor="middle" fill="#555">black bar '
               f'and dot: an effect (interval excludes 1); grey bar: no effect measurable '
               f'(interval holds 1); diamond: a published number</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def forest_marks(r: PlotRow, y: float, x, right: float) -> list[str]:
    if r.heading:
        return []
    if r.point:
        px = x(r.point)
        return [f'<polygon points="{px:.1f},{y - 5:.1f} {px + 5:.1f},{y:.1f} {px:.1f},{y + 5:.1f} '
                f'{px - 5:.1f},{y:.1f}" fill="#d95f02"/>',
                f'<text x="{right + 10}" y="{y + 4:.1f}">{stats.fmt(r.point)} (published, '
                f'no interval)</text>']
    iv = r.interval
    assert iv is not None
    text = f'<text x="{right + 10}" y="{y + 4:.1f}">{esc(iv.text())}</text>'
    if iv.verdict == stats.TOO_FEW:
        return [f'<text x="{x(1.0) + 6:.1f}" y="{y + 4:.1f}" fill="#888" '
                f'font-style="italic">too few rounds</text>', text]
    colour = "black" if iv.verdict == stats.EFFECT else "#999"
    marks = [f'<line x1="{x(iv.lo):.1f}" y1="{y:.1f}" x2="{x(iv.hi):.1f}" y2="{y:.1f}" '
             f'stroke="{colour}" stroke-width="3"/>', text]
    if iv.verdict == stats.EFFECT:
        marks.append(f'<circle cx="{x(iv.median):.1f}" cy="{y:.1f}" r="4" fill="black"/>')
    return marks


def esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main(argv):
    args = parse_args(argv)
    common.sigterm_like_ctrl_c()
    return main_host(args) if args.host else main_guest(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
