"""KUnit's suites run again and again in one boot (tools/flake --one-boot).

The configuration's kernel, plus KUnit's debugfs files, boots as a guest
with KUnit on: every suite runs once at boot, which is what makes its
/sys/kernel/debug/kunit/<suite>/ files. Then a guest script writes each
suite's "run" file N times (the write returns when the suite has run) and
keeps each run's "results" file. Each run becomes one set of rows,
compared as repeated gate runs are. The boot-time run is not counted: it is
the gate's own KUnit boot, and the point here is the same suites again in a
kernel that has been running, with userspace, for a while."""

from __future__ import annotations

import os
from typing import List

from . import ktap
from .common import REPO, config_fragments
from .verdict import Verdict

# The one symbol the kernel adds to the configuration's: without it a booted
# kernel cannot run a suite again.
FRAGMENT = os.path.join(REPO, "configs", "kunit-rerun.config")
# In the out share: RESULTS/<run>/<suite>.ktap, one results file per suite and run.
RESULTS = "kunit"


def fragments(cfg: str, family: str) -> List[str]:
    """The configuration's fragments, then KUnit's debugfs files."""
    return config_fragments(cfg, family) + [FRAGMENT]


def script(runs: int) -> str:
    """The guest's part: every suite that has a run file, run `runs` times
    in turn, each run's results file copied to the out share."""
    return f"""set -u
cd /sys/kernel/debug/kunit || {{ echo "no /sys/kernel/debug/kunit: no KUnit debugfs"; exit 3; }}
suites=$(for s in *; do [ -e "$s/run" ] && echo "$s"; done)
[ -n "$suites" ] || {{ echo "no suite has a run file (none ran at boot)"; exit 3; }}
for i in $(seq 1 {runs}); do
	mkdir -p "/tmp/out/{RESULTS}/$i"
	for s in $suites; do
		echo run > "$s/run" || exit 4
		cat "$s/results" > "/tmp/out/{RESULTS}/$i/$s.ktap" || exit 4
	done
	echo "run $i of {runs}: $(echo $suites | wc -w) suites"
done
"""


def read_runs(out_dir: str, runs: int, cfg: str, version: str) -> List[dict]:
    """One gate-style JSON document per run (rows of kind "kunit" of cfg),
    in run order. A run with no results file is one failed row, so a guest
    that died part way shows as rows missing from the later runs."""
    docs = []
    for i in range(1, runs + 1):
        v = Verdict(version)
        where = os.path.join(out_dir, RESULTS, str(i))
        names = sorted(os.listdir(where)) if os.path.isdir(where) else []
        if not names:
            v.add(cfg, "kunit", "(guest)", "run finished", "fail",
                  f"run {i} wrote no results (the guest stopped before it)")
        for name in names:
            with open(os.path.join(where, name), errors="replace") as f:
                v.add_rows(cfg, "kunit", ktap.kunit_rows(f.read()))
        docs.append(v.to_json())
    return docs


def failed_rows(docs: List[dict]) -> List[str]:
    """'suite.name (runs failed/runs): reason' for every row that failed in
    any run: a steady failure is still a failure."""
    failed: dict = {}
    for doc in docs:
        for r in doc["results"]:
            if r["status"] == "fail":
                n, why = failed.get((r["suite"], r["name"]), (0, r["reason"]))
                failed[r["suite"], r["name"]] = (n + 1, why)
    return [f"{s}.{n} ({k}/{len(docs)} runs failed): {why}" for (s, n), (k, why) in failed.items()]

