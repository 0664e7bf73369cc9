"""Compare two gate runs (their JSON), as lkp's ncompare does for two
results: what newly fails, what was fixed, what newly skips, what appeared
or went, and the ratio of each timing the runs both recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

Key = Tuple[str, str, str, str]    # config, kind, suite, name

# Timings a run records per configuration (seconds).
TIMINGS = ("kernel_build_s", "kunit_exec_s", "guest_s")


def _rows(doc: dict) -> Dict[Key, dict]:
    return {(r["config"], r["kind"], r["suite"], r["name"]): r for r in doc.get("results", [])}


@dataclass
class Comparison:
    new_failures: List[Tuple[Key, str]] = field(default_factory=list)
    fixed: List[Key] = field(default_factory=list)
    new_skips: List[Tuple[Key, str]] = field(default_factory=list)
    appeared: List[Key] = field(default_factory=list)
    gone: List[Key] = field(default_factory=list)
    timings: List[Tuple[str, str, float, float]] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        """A result that passed (or did not exist) now fails."""
        return bool(self.new_failures)


def compare(old: dict, new: dict) -> Comparison:
    o, n = _rows(old), _rows(new)
    c = Comparison()
    for key, r in n.items():
        before = o.get(key)
        if r["status"] == "fail" and (before is None or before["status"] != "fail"):
            c.new_failures.append((key, r.get("reason", "")))
        elif r["status"] == "skip" and (before is None or before["status"] != "skip"):
            c.new_skips.append((key, r.get("reason", "")))
        elif r["status"] == "pass" and before is not None and before["status"] == "fail":
            c.fixed.append(key)
        if before is None:
            c.appeared.append(key)
    c.gone = [k for k in o if k not in n]
    for cfg, facts in new.get("configs", {}).items():
        ofacts = old.get("configs", {}).get(cfg, {})
        for t in TIMINGS:
            a, b = ofacts.get(t), facts.get(t)
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a > 0:
                c.timings.append((cfg, t, float(a), float(b)))
    return c


def _name(key: Key) -> str:
    cfg, kind, suite, name = key
    return f"{cfg} {kind} {suite}: {name}"


def report(c: Comparison, old_label: str, new_label: str) -> str:
    out = [f"compare: {old_label} -> {new_label}"]
    for title, items in (("new failures", [f"{_name(k)}  ({why})" for k, why in c.new_failures]),
                         ("fixed", [_name(k) for k in c.fixed]),
                         ("new skips", [f"{_name(k)}  ({why})" for k, why in c.new_skips]),
                         ("only in the new run", [_name(k) for k in c.appeared]),
                         ("only in the old run", [_name(k) for k in c.gone])):
        out.append(f"  {title}: {len(items)}")
        out += [f"    {x}" for x in items]
    if c.timings:
        out.append("  timings (new / old):")
        out += [f"    {cfg} {t}: {a:g} -> {b:g} s ({b / a:.2f})" for cfg, t, a, b in c.timings]
    out.append(f"  verdict: {'REGRESSED' if c.regressed else 'no new failure'}")
    return "\n".join(out)


@dataclass
class Flake:
    """A row whose status differed between repeated runs of the same build."""
    key: Key
    counts: Dict[str, int]          # status -> runs
    reason: str                     # the first non-pass run's reason


def flakes(runs: List[dict]) -> Tuple[List[Flake], int]:
    """Rows that did not have one status in every run (a row missing from a
    run counts as "absent"), and how many rows were seen."""
    rows = [_rows(doc) for doc in runs]
    keys = sorted(set().union(*rows)) if rows else []
    out = []
    for key in keys:
        seen = [r.get(key) for r in rows]
        counts: Dict[str, int] = {}
        for r in seen:
            st = r["status"] if r else "absent"
            counts[st] = counts.get(st, 0) + 1
        if len(counts) > 1:
            why = next((r.get("reason", "") for r in seen if r and r["status"] != "pass"), "")
            out.append(Flake(key, counts, why))
    return out, len(keys)


def flake_report(found: List[Flake], nrows: int, nruns: int) -> str:
    """One line a flaky row (its statuses over the runs and a reason), then
    the totals line."""
    lines = []
    for f in found:
        tally = ", ".join(f"{st} {n}/{nruns}" for st, n in sorted(f.counts.items()))
        lines.append(f"FLAKY  {_name(f.key)}: {tally}" + (f"\n       {f.reason}" if f.reason else ""))
    lines.append(f"{nrows - len(found)} steady, {len(found)} flaky over {nruns} runs")
    return "\n".join(lines)
