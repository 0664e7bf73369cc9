#!/usr/bin/env python3
"""Is the gate steady? Run tools/gate N times on one build (the kernel and
selftests build once; each run boots the KUnit kernel and the kselftest
guest again) and report every result whose status was not the same in all
runs. Exit 0 when every row was steady, 1 when any flaked or a run wrote no
result, 2 on bad input. Options after -- go to tools/gate unchanged, e.g.

    tools/flake --runs 10 -- --tree 7.3 --only kselftest
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
    ap.add_argument("gate_args", nargs="*", metavar="-- GATE-OPTION",
                    help="options for tools/gate (after --)")
    args = ap.parse_args(argv)
    if args.runs < 2:
        ap.error("--runs must be at least 2: one run cannot differ from itself")
    if any(a in ("--json", "--kcidb", "--compare", "--against", "--matrix")
           or a.startswith(("--json=", "--kcidb=")) for a in args.gate_args):
        ap.error("give tools/gate no --json, --kcidb, --compare or --matrix here: "
                 "tools/flake writes and compares the runs itself")
    import gate
    try:
        gate.parse_args(args.gate_args)   # bad gate options fail here, in one line
    except SystemExit as e:
        sys.exit(e.code)
    common.check_inputs(ap, args, outputs=[("--json", args.json)])
    return args


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


def main(argv):
    args = parse_args(argv)
    common.sigterm_like_ctrl_c()
    try:
        docs = run_gates(args)
    except KeyboardInterrupt:
        print("flake: interrupted", file=sys.stderr)
        return 130
    if docs is None:
        return 1
    found, nrows = compare.flakes(docs)
    print(compare.flake_report(found, nrows, len(docs)))
    if args.json:
        common.write_json(args.json, {
            "runs": len(docs), "verdicts": [d["verdict"] for d in docs], "rows": nrows,
            "flaky": [{"config": f.key[0], "kind": f.key[1], "suite": f.key[2], "name": f.key[3],
                       "counts": f.counts, "reason": f.reason} for f in found]})
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
