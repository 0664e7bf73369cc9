"""Which of our tests may skip where: a skip is a pass only where the
configuration rules the case out. Any other skip of our suite fails the
configuration, with the skip's own reason in the row, so a regression that
makes THP faults fall back (our kselftests then skip with "not a THP") or a
configuration that lost FAILSLAB (the ctor-failure cases skip) fails the gate
instead of passing on what still ran."""

import fnmatch
from .result import row

# (kind, suite glob, case glob, rule over the configuration's facts, why the
# skip is right there). facts: the key symbols (TRANSPARENT_HUGEPAGE,
# SPLIT_PTE_PTLOCKS, SPLIT_PMD_PTLOCKS, ALLOC_SPLIT_PTLOCKS, ...) and "thp",
# the guest's THP mode line ("always [madvise] never").
ALLOWED_SKIPS = [
    ("kunit", "pmd_ptlock_deposit", "*",
     lambda f: f.get("TRANSPARENT_HUGEPAGE") != "y",
     "no THP in the kernel: no deposit queue"),
    ("kunit", "pmd_ptlock_ctor_fail", "*",
     lambda f: f.get("ALLOC_SPLIT_PTLOCKS") != "y" or f.get("SPLIT_PTE_PTLOCKS") != "y",
     "the ptlock is not allocated: table construction cannot fail"),
    ("kselftest", "pmd_ptlock_reclaim", "*",
     lambda f: f.get("PT_RECLAIM") != "y",
     "no CONFIG_PT_RECLAIM (6.12 has none): emptied PTE tables are kept"),
    ("kselftest", "pmd_ptlock_*", "*",
     lambda f: f.get("TRANSPARENT_HUGEPAGE") != "y" or thp_mode(f) == "never",
     "no THP in the kernel, or THP set to never"),
]


def thp_mode(facts):
    """The selected THP mode from the guest's line, e.g. 'always' from
    '[always] madvise never'; None when the guest did not report one."""
    line = facts.get("thp") or ""
    for word in line.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return None


def allowed(kind, suite, name, facts):
    """The reason a skip of this row is right in this configuration, or None."""
    for k, sglob, nglob, rule, why in ALLOWED_SKIPS:
        if k == kind and fnmatch.fnmatchcase(suite, sglob) and fnmatch.fnmatchcase(name, nglob):
            if rule(facts):
                return why
    return None


# Our suites and programs: upstream's (run beside ours with --kselftests)
# skip by their own rules.
OURS = "pmd_ptlock*"


def judge(rows, kind, facts):
    """Rows with every skip of ours the configuration does not rule out made
    a failure."""
    out = []
    for suite, name, status, reason in rows:
        if (status == "skip" and fnmatch.fnmatchcase(suite, OURS)
                and allowed(kind, suite, name, facts) is None):
            status, reason = "fail", f"skipped where it must run: {reason or 'no reason given'}"
        out.append(row(suite, name, status, reason))
    return out


def absent(rows, programs):
    """A failed row for each of our programs the run should have run but
    that left no result at all (not built, not listed in its category, or
    dropped by the runner): nothing of ours passes by not running."""
    ran = {r.suite for r in rows if r.name == "(program)"}
    return [row(p, "(program)", "fail", "never ran: no result from the kselftest runner")
            for p in programs if p not in ran]
