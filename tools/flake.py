#!/usr/bin/env python3
"""Is the gate steady? Run tools/gate N times on one build (the kernel and
selftests build once; each run boots the KUnit kernel and the kselftest
guest again) and report every result whose status was not the same in all
runs. Exit 0 when every row was steady, 1 when any flaked or a run wrote no
result, 2 on bad input. Options after -- go to tools/gate unchanged, e.g.

    tools/flake --runs 10 -- --tree 7.3 --only kselftest

With --one-boot it runs the KUnit suites N times in one boot instead: the
configuration's kernel plus KUnit's debugfs files (configs/kunit-rerun.config,
its own build dir) boots once, runs every suite at boot, and then each suite
N times more from userspace; those N runs are compared. It takes the gate's
--tree --config --filter --cache --accel --jobs --no-install --smp --timeout:

    tools/flake --one-boot --runs 20 -- --tree 7.3 --config debug
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gatelib import common, compare  # noqa: E402
from gatelib.common import StepTimeout, run_logged, say  # noqa: E402

GATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gate")


def parse_args(argv):
    ap = common.OneLineParser(prog="tools/flake", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10, metavar="N",
                    help="gate runs (default %(default)s, at least 2)")
    ap.add_argument("--json", metavar="FILE",
                    help="write the flaky rows and the runs' verdicts as JSON")
    ap.add_argument("--one-boot", action="store_true",
                    help="run the KUnit suites --runs times in one boot instead of --runs gate runs")
    ap.add_argument("gate_args", nargs="*", metavar="-- GATE-OPTION",
                    help="options for tools/gate (after --)")
    args = ap.parse_args(argv)
    if args.runs < 2:
        ap.error("--runs must be at least 2: one run cannot differ from itself")
    if any(a in ("--json", "--kcidb", "--compare", "--against", "--matrix")
           or a.startswith(("--json=", "--kcidb=")) for a in args.gate_args):
        ap.error("give tools/gate no --json, --kcidb, --compare or --matrix here: "
                 "tools/flake writes and compares the runs itself")
    if args.one_boot:
        given = [a.split("=")[0] for a in args.gate_args if a.startswith("--")]
        other = [a for a in given if a not in ONE_BOOT_OPTIONS]
        if other:
            ap.error(f"--one-boot runs KUnit only, on the distro tree and series: it does not "
                     f"take the gate's {other[0]}")
    import gate
    try:
        args.gate = gate.parse_args(args.gate_args)   # bad gate options fail here, in one line
    except SystemExit as e:
        sys.exit(e.code)
    common.check_inputs(ap, args, outputs=[("--json", args.json)])
    return args


# The gate's options that mean something to a boot that only runs KUnit.
ONE_BOOT_OPTIONS = ("--tree", "--config", "--filter", "--cache", "--accel", "--jobs",
                    "--no-install", "--smp", "--timeout")


def run_gates(args):
    """The gate's JSON of each run, or None when a run wrote none."""
    docs = []
    with tempfile.TemporaryDirectory(prefix="flake-") as tmp:
        for i in range(1, args.runs + 1):
            out, log = os.path.join(tmp, f"run{i}.json"), os.path.join(tmp, f"run{i}.log")
            say(f"flake: run {i}/{args.runs}")
            try:
                run_logged([GATE, "--json", out] + args.gate_args, log, "gate", 3 * 3600,
                           heartbeat=120)
            except StepTimeout:
                pass
            try:
                with open(out) as f:
                    docs.append(json.load(f))
            except (OSError, ValueError):
                print(f"flake: run {i} wrote no result", file=sys.stderr)
                return None
            say(f"flake: run {i}: {docs[-1]['verdict']}")
    return docs


def run_one_boot(args):
    """The KUnit suites --runs times in one boot: (one document per run,
    failures outside the runs: the guest's, the console's)."""
    import gate
    from gatelib import console, guest, kbuild, kunitrepeat, kunitrun, tree
    from gatelib.cache import open_locked
    g = args.gate
    cache = open_locked(g.cache, g.no_install)
    src = tree.prepare(cache, tree.find_tarball(install=not g.no_install, tree_name=g.tree))
    head = tree.apply_series(src.path, src.version,
                             tree.series_files(gate.series_for(g, src, cache)))
    say(f"series: applied (HEAD {head[:12]})")
    variant = f"{g.config}-kunit-rerun"
    kb = kbuild.build(src.path, kunitrepeat.fragments(g.config, src.family),
                      cache.kernel_build(src.cache_key, variant), cache.logs(src.cache_key, variant),
                      cache, kbuild.jobs(g.jobs))
    say(f"flake: {src.version} {g.config} with KUnit's debugfs files: one boot, "
        f"{args.runs} runs of every suite after the boot's own")
    status, output, cons, secs, hung = guest.run_script(
        src.path, kb.build, kb.bzimage, kb.log_dir, kunitrepeat.script(args.runs),
        accel=g.accel, smp=g.smp, timeout=guest.bound("ours", g.config, g.timeout), mem="1G",
        kunit_args=kunitrun.kunit_args(g.filter))
    say(f"flake: the guest took {secs} s; console {kb.log_dir}/guest-console.log")
    problems = [f"{r.suite}: {r.name}: {r.reason}"
                for r in console.results(cons, "console") if r.status == "fail"]
    if hung:
        problems.append(f"guest: {hung}")
    elif status != 0:
        last = output.strip().splitlines()[-1] if output.strip() else "no output"
        problems.append(f"guest: the runs exited {status}: {last}")
    docs = kunitrepeat.read_runs(os.path.join(kb.log_dir, "out"), args.runs, g.config, src.version)
    return docs, problems + kunitrepeat.failed_rows(docs)


def main(argv):
    args = parse_args(argv)
    common.sigterm_like_ctrl_c()
    problems = []
    try:
        if args.one_boot:
            docs, problems = run_one_boot(args)
        else:
            docs = run_gates(args)
    except KeyboardInterrupt:
        print("flake: interrupted", file=sys.stderr)
        return 130
    except common.GateError as e:
        print(f"flake: {e}", file=sys.stderr)
        return 1
    if docs is None:
        return 1
    found, nrows = compare.flakes(docs)
    print(compare.flake_report(found, nrows, len(docs)))
    for p in problems:
        print(f"FAILED {p}")
    if args.json:
        common.write_json(args.json, {
            "mode": "one-boot" if args.one_boot else "gate runs",
            "runs": len(docs), "verdicts": [d["verdict"] for d in docs], "rows": nrows,
            "flaky": [{"config": f.key[0], "kind": f.key[1], "suite": f.key[2], "name": f.key[3],
                       "counts": f.counts, "reason": f.reason} for f in found],
            "failed": problems})
    return 1 if found or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
