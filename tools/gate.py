#!/usr/bin/env python3
"""pmd-ptlock gate: Debian's linux-source-6.12 -> our series -> KUnit under QEMU -> verdict.

Unpacks the tree into a cache outside the repo (once), resets it to its
pristine commit, applies patches/ with git am, builds and boots the KUnit
suite with the tree's own kunit.py (TCG by default), scans the console for
kernel reports, prints a verdict table and exits 0 only when all passed.
"""

import argparse
import fcntl
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gatelib import common, deps, kunitrun, series, tree  # noqa: E402
from gatelib.common import GateError, say  # noqa: E402
from gatelib.verdict import Verdict  # noqa: E402

CONFIGS = ["default"]


class Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, non-zero: bad input is not a traceback or a usage dump.
        print(f"gate: {message} (see tools/gate --help)", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    ap = Parser(prog="tools/gate", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="default", choices=CONFIGS,
                    help="kernel configuration to test (default: %(default)s)")
    ap.add_argument("--filter", default="", metavar="GLOB",
                    help="KUnit suite/case glob as kunit.py's filter_glob, e.g. 'pmd_ptlock_deposit.*'")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    ap.add_argument("--cache", metavar="DIR",
                    help="tree, build dirs and ccache (default $PMD_GATE_CACHE or ~/.cache/pmd-ptlock-gate)")
    ap.add_argument("--tarball", metavar="FILE",
                    help="kernel source tarball (default /usr/src/linux-source-6.12.tar.xz)")
    ap.add_argument("--patches", metavar="DIR", default=series.PATCH_DIR,
                    help="series to apply (default: the repo's patches/)")
    ap.add_argument("--timeout", type=int, default=300, metavar="S",
                    help="bound on a guest run; a guest still running then is killed and fails (default %(default)s)")
    ap.add_argument("--accel", choices=["tcg", "kvm"], default="tcg",
                    help="QEMU accelerator (default tcg; kvm only where it is known to boot)")
    ap.add_argument("--smp", type=int, default=2, metavar="N", help="guest vCPUs (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=0, metavar="N", help="make -j (default: CPUs)")
    ap.add_argument("--qemu-args", default="", metavar="ARGS", help="extra QEMU arguments (one string)")
    ap.add_argument("--no-install", action="store_true",
                    help="never apt-get install missing packages; fail naming them instead")
    args = ap.parse_args(argv)
    if args.timeout < 5:
        ap.error("--timeout must be at least 5 seconds")
    if args.smp < 1:
        ap.error("--smp must be at least 1")
    return args


def main(argv):
    args = parse_args(argv)
    start = time.monotonic()
    try:
        if os.geteuid() == 0 and not args.no_install:
            deps.ensure(install=True)
        deps.require_qemu()
        cache = common.cache_dir(args.cache)
        lock = open(os.path.join(cache, "gate.lock"), "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"gate: another run holds {cache}/gate.lock; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        tarball = tree.find_tarball(args.tarball, install=not args.no_install)
        src, version = tree.prepare(cache, tarball)
        say(f"tree: linux {version} at {src}")
        patches = tree.series_files(args.patches)
        head = tree.apply_series(src, version, patches)
        say(f"series: {len(patches)} patches applied (HEAD {head[:12]})")

        verdict = Verdict(version)
        cfg = args.config
        build_root = os.path.join(cache, "build", version, cfg)
        log_dir = os.path.join(cache, "logs", version, cfg)
        rows, cons, facts = kunitrun.run(
            src, os.path.join(build_root, "kunit"), os.path.join(common.REPO, ".kunitconfig"),
            log_dir, cache=cache, filter_glob=args.filter, timeout=args.timeout, accel=args.accel,
            smp=args.smp, jobs=args.jobs or None, extra_qemu=args.qemu_args)
        verdict.info[cfg] = facts
        verdict.add_rows(cfg, "kunit", rows)
        verdict.add_rows(cfg, "console", cons)
    except GateError as e:
        print(f"gate: {e}", file=sys.stderr)
        if args.json:
            fail = Verdict(locals().get("version", "unknown"))
            fail.add(args.config, "console", "(gate)", "setup", "fail", str(e))
            fail.write_json(args.json)
        return 1
    except KeyboardInterrupt:
        print("gate: interrupted; the tree is reset to pristine on the next run", file=sys.stderr)
        return 130

    print(verdict.table())
    say(f"gate: {int(time.monotonic() - start)} s; logs in {log_dir}")
    if args.json:
        verdict.write_json(args.json)
        say(f"gate: JSON written to {args.json}")
    return 0 if verdict.verdict == "pass" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
