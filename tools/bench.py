#!/usr/bin/env python3
"""Split PMD lock benchmark: the seed series' table as ratios, measured here.

Builds two kernels from the same tree and configuration (the gate's default
one) plus a benchmark-only patch that makes CONFIG_SPLIT_PMD_PTLOCKS
selectable: "split" (y) and "mm-lock" (n), differing by that symbol alone.
Boots each in the same guest shape and runs bench/pmdbench.c in three cases,
interleaved A B C A B C ... for --rounds rounds:

  A  THP off (never), split kernel        - the seed's "THP off"
  B  THP on, mm-lock kernel               - the seed's "THP on" before the series
  C  THP on, split kernel                 - the seed's "THP on" with the series

Each boot runs the seed's fault workload (T threads fault their share of
--size bytes, each thread in its own 1 GiB regions) for every T of the
sweep, and in B and C the PMD-lock-bound walks (MADV_POPULATE_READ, mincore,
huge zero page fault + zap) with all threads in one PMD table ("same") and
each in its own ("spread"), and in C the zeroing bound (memset of 2 MiB
blocks). Prints medians with min-max spreads, the ratios B/C and A/C beside
the seed's 1.47 and 1.08, and writes table.txt, results.json and plot.svg
to --out. Not a test: nothing here passes or fails on a number.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gatelib import ccache, common, console, guest, kunitrun, series, tree  # noqa: E402
from gatelib.common import GateError, say  # noqa: E402

BENCH = os.path.join(common.REPO, "bench")
PATCH = os.path.join(BENCH, "0001-mm-make-SPLIT_PMD_PTLOCKS-selectable-benchmark-only.patch")
SEED = {"mm-lock/split": 49.85 / 33.90, "thp-off/split": 36.54 / 33.90}
CASES = [("A", "split", "never", "THP off"),
         ("B", "mm-lock", "always", "THP on, mm-wide PMD lock"),
         ("C", "split", "always", "THP on, split PMD locks")]
WALKS = ["populate", "mincore", "zero"]


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


def parse_args(argv):
    ap = common.OneLineParser(prog="tools/bench", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="bench-results", metavar="DIR",
                    help="results folder (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of A B C (default %(default)s)")
    ap.add_argument("--size", type=size_arg, default=size_arg("1g"),
                    help="bytes the fault workload faults per run (default 1g)")
    ap.add_argument("--vcpus", type=int, default=2, help="guest vCPUs (default %(default)s)")
    ap.add_argument("--sweep", default="",
                    help="thread counts, comma-separated (default 1,2,4,... up to 4 x vCPUs)")
    ap.add_argument("--iters", type=int, default=20000,
                    help="walk iterations per thread (default %(default)s)")
    ap.add_argument("--mem", default="", help="guest memory (default: 2 x size + 1G)")
    ap.add_argument("--accel", choices=["tcg", "kvm"], default="tcg")
    ap.add_argument("--timeout", type=int, default=1800, metavar="S", help="bound on one boot")
    ap.add_argument("--cache", metavar="DIR")
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--no-install", action="store_true")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.vcpus < 1 or args.iters < 1:
        ap.error("--rounds, --vcpus and --iters must be at least 1")
    if args.sweep:
        try:
            args.sweep = sorted({int(x) for x in args.sweep.split(",")})
        except ValueError:
            ap.error(f"--sweep {args.sweep}: expected numbers like 1,2,4")
        if args.sweep[0] < 1:
            ap.error("--sweep: thread counts start at 1")
    else:
        args.sweep, t = [], 1
        while t <= 4 * args.vcpus:
            args.sweep.append(t)
            t *= 2
    args.headline = min(args.sweep, key=lambda t: abs(t - args.vcpus))
    args.mem = args.mem or f"{2 * args.size // (1 << 30) + 2}G"
    return args


def build_kernels(src, version, cache, jobs):
    """Both kernels, each checked to have the SPLIT_PMD_PTLOCKS it asked for."""
    env = ccache.env(cache)
    out = {}
    for name in ("split", "mm-lock"):
        build = os.path.join(cache, "build", version, f"bench-{name}", "kernel")
        log_dir = os.path.join(cache, "logs", version, f"bench-{name}")
        os.makedirs(log_dir, exist_ok=True)
        # The gate's default kernel (KUnit built in, kept off at boot by
        # kunit.enable=0) plus one symbol: the split kernel then shares
        # nearly every object with the gate's default build in ccache.
        frags = common.config_fragments("default") + [os.path.join(BENCH, f"{name}.config")]
        guest.configure(src, build, frags, log_dir, env)   # fails if a symbol did not take
        kernel = guest.build_kernel(src, build, log_dir, env, jobs)
        facts = kunitrun.config_facts(os.path.join(build, ".config"),
                                      os.path.join(build, "include", "generated", "bounds.h"))
        out[name] = (build, kernel, log_dir, facts)
    if out["split"][3]["SPLIT_PMD_PTLOCKS"] != "y" or out["mm-lock"][3]["SPLIT_PMD_PTLOCKS"] != "n":
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


def compile_bench(cache, version):
    """Into the cache: the guest sees the host's / but has its own /tmp."""
    d = os.path.join(cache, "build", version, "bench")
    os.makedirs(d, exist_ok=True)
    binary = os.path.join(d, "pmdbench")
    r = subprocess.run(["gcc", "-O2", "-Wall", "-pthread", "-o", binary,
                        os.path.join(BENCH, "pmdbench.c")], capture_output=True, text=True)
    if r.returncode:
        raise GateError(f"pmdbench does not compile: {r.stderr.strip().splitlines()[0]}")
    return binary


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def summarise(args, runs):
    """Medians and spreads per case, the ratios, the sweep and the walks."""
    def pick(case, kind, **kw):
        return [r for r in runs if r["case"] == case and r["kind"] == kind
                and all(r["data"].get(k) == v for k, v in kw.items())]

    s = {"headline_threads": args.headline, "cases": {}, "sweep": {}, "walks": {}}
    for letter, _, _, label in CASES:
        rs = [r["data"] for r in pick(letter, "fault", threads=args.headline)]
        s["cases"][letter] = {
            "label": label, "n": len(rs),
            **{k: {"median": med([r[k] for r in rs]), "min": min((r[k] for r in rs), default=None),
                   "max": max((r[k] for r in rs), default=None)}
               for k in ("wall_s", "faults", "faults_per_s")}}
        s["sweep"][letter] = {t: med([r["data"]["wall_s"] for r in pick(letter, "fault", threads=t)])
                              for t in args.sweep}
    wall = {c: s["cases"][c]["wall_s"]["median"] for c in "ABC"}
    s["ratios"] = {"mm-lock/split": wall["B"] / wall["C"], "thp-off/split": wall["A"] / wall["C"],
                   "seed": SEED}
    clear = [r["data"]["bytes_per_s"] for r in runs if r["kind"] == "clear"]
    c_rs = [r["data"] for r in pick("C", "fault", threads=args.headline)]
    thp_bytes_per_s = med([r["thp_fault_alloc"] * (2 << 20) / r["wall_s"] for r in c_rs])
    s["zeroing"] = {"clear_bytes_per_s": med(clear), "thp_fault_bytes_per_s": thp_bytes_per_s,
                    "fraction": thp_bytes_per_s / med(clear) if clear else None}
    for letter in "BC":
        for w in WALKS:
            per = {lay: med([r["data"]["ops_per_s"] for r in pick(letter, "walk", workload=w,
                                                                   layout=lay)])
                   for lay in ("same", "spread")}
            per["spread/same"] = per["spread"] / per["same"] if per["same"] else None
            s["walks"].setdefault(w, {})[letter] = per
    return s


def fmt_table(args, s, facts):
    L = [f"split PMD lock benchmark: linux {facts['tree']}, {args.vcpus} vCPUs ({args.accel}), "
         f"{args.rounds} rounds interleaved A B C, fault size {args.size >> 20} MiB, "
         f"T = {args.headline} for the case table",
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
    r = s["ratios"]
    L += ["", f"ratio B/C (mm-lock / split):  {r['mm-lock/split']:.2f}   seed: {SEED['mm-lock/split']:.2f}",
          f"ratio A/C (THP off / split):  {r['thp-off/split']:.2f}   seed: {SEED['thp-off/split']:.2f}"]
    z = s["zeroing"]
    if z["fraction"] is not None:
        L.append(f"zeroing bound: clearing 2 MiB blocks runs at {z['clear_bytes_per_s'] / 1e9:.2f} GB/s; "
                 f"THP faults in C deliver {z['thp_fault_bytes_per_s'] / 1e9:.2f} GB/s "
                 f"= {100 * z['fraction']:.0f} % of it")
    L += ["", "thread sweep (median wall s of the fault workload):",
          f"{'T':>4} " + " ".join(f"{c:>10}" for c in "ABC") + f" {'B/C':>8}"]
    for t in args.sweep:
        row = [s["sweep"][c][t] for c in "ABC"]
        L.append(f"{t:>4} " + " ".join(f"{v:>10.3f}" for v in row) + f" {row[1] / row[2]:>8.2f}")
    L += ["", f"PMD-lock-bound walks at T = {args.headline} (median ops/s; same = one PMD table, "
              f"spread = a table per thread):",
          f"{'walk':<10} {'kernel':<8} {'same':>12} {'spread':>12} {'spread/same':>12}"]
    for w in WALKS:
        for letter, name in (("B", "mm-lock"), ("C", "split")):
            p = s["walks"][w][letter]
            ratio = f"{p['spread/same']:.2f}" if p["spread/same"] else "n/a"
            L.append(f"{w:<10} {name:<8} {p['same']:>12.0f} {p['spread']:>12.0f} {ratio:>12}")
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


def main(argv):
    args = parse_args(argv)
    start = time.monotonic()
    try:
        cache, lock = common.locked_cache(args.cache, args.no_install)
        src, version = tree.prepare(cache, tree.find_tarball(install=not args.no_install))
        # The series plus the benchmark-only patch (kept apart from the series).
        tree.apply_series(src, version, tree.series_files(series.PATCH_DIR) + [PATCH])
        jobs = args.jobs or os.cpu_count() or 2
        kernels = build_kernels(src, version, cache, jobs)
        os.makedirs(args.out, exist_ok=True)
        binary = compile_bench(cache, version)
        st_build = kernels["split"][0]
        runs, consoles = [], []
        for rnd in range(1, args.rounds + 1):
            for case in CASES:
                letter, kname, thp, _ = case
                build, kernel, log_dir, _ = kernels[kname]
                say(f"bench: round {rnd}/{args.rounds}, case {letter} ({kname}, THP {thp})")
                status, output, cons, secs, hung = guest.run_script(
                    src, st_build, kernel, log_dir, script(args, binary, case), accel=args.accel,
                    smp=args.vcpus, timeout=args.timeout, mem=args.mem, thp=thp)
                if hung or status != 0:
                    raise GateError(f"case {letter} round {rnd}: "
                                    f"{hung or f'the workload exited {status}'}: "
                                    f"{output.strip().splitlines()[-1] if output.strip() else 'no output'}"
                                    f" (log: {log_dir}/guest-console.log)")
                consoles += [r for r in console.results(cons, f"{letter} console") if r[2] == "fail"]
                for line in output.splitlines():
                    kind, _, js = line.partition(" ")
                    if kind in ("fault", "walk", "clear") and js.startswith("{"):
                        runs.append({"round": rnd, "case": letter, "kind": kind,
                                     "data": json.loads(js)})
        if consoles:
            raise GateError(f"a benchmark guest reported a kernel problem: {consoles[0]}")
        want = args.rounds * len(CASES) * len(args.sweep)
        got = sum(r["kind"] == "fault" for r in runs)
        if got != want:
            raise GateError(f"{got} fault runs parsed, {want} expected (see the guest logs under "
                            f"{os.path.join(cache, 'logs', version)}/bench-*)")
    except GateError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    s = summarise(args, runs)
    facts = {"tree": version, "vcpus": args.vcpus, "accel": args.accel, "size": args.size,
             "rounds": args.rounds, "sweep": args.sweep, "iters": args.iters,
             "kernels": {k: v[3] for k, v in kernels.items()}}
    text = fmt_table(args, s, facts)
    print(text)
    with open(os.path.join(args.out, "table.txt"), "w") as f:
        f.write(text + "\n")
    common.write_json(os.path.join(args.out, "results.json"), {**facts, "summary": s, "runs": runs})
    with open(os.path.join(args.out, "plot.svg"), "w") as f:
        f.write(svg_plot(args, s))
    say(f"bench: {int(time.monotonic() - start)} s; table.txt, results.json, plot.svg in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
