"""Collect results, print the verdict table, write the JSON."""

from __future__ import annotations

from typing import Dict, Iterable, List, Tuple

from . import common
from .result import Result, Row, Status


class Verdict:
    def __init__(self, tree_version: str):
        self.tree = tree_version
        self.results: List[Result] = []
        self.info: Dict[str, dict] = {}          # per-config facts (key symbols, timings)

    def add(self, config: str, kind: str, suite: str, name: str, status: str,
            reason: str = "") -> None:
        self.results.append(Result(config, kind, suite, name, Status(status), reason or ""))

    def add_rows(self, config: str, kind: str, rows: Iterable[Row]) -> None:
        for r in rows:
            self.results.append(Result.of(config, kind, Row(*r)))

    def counts(self) -> Dict[str, int]:
        return {s.value: sum(r.status == s for r in self.results) for s in Status}

    def config_verdicts(self) -> Dict[str, Tuple[str, Dict[str, int]]]:
        """{config: (verdict, counts)} in the order the configurations ran."""
        out: Dict[str, Tuple[str, Dict[str, int]]] = {}
        for cfg in list(self.info) + [r.config for r in self.results]:
            if cfg in out:
                continue
            rows = [r for r in self.results if r.config == cfg]
            c = {s.value: sum(r.status == s for r in rows) for s in Status}
            tested = any(r.status == Status.PASS and r.kind != "console" for r in rows)
            out[cfg] = ("pass" if c["fail"] == 0 and tested else "fail", c)
        return out

    @property
    def verdict(self) -> str:
        # Every configuration passed on its own (no failure, something tested:
        # a clean console alone is not a pass), and there was one at least.
        per = self.config_verdicts()
        return "pass" if per and all(v == "pass" for v, _ in per.values()) else "fail"

    def to_json(self) -> dict:
        return {"verdict": self.verdict, "tree": self.tree,
                "results": [r.to_json() for r in self.results], "configs": self.info}

    def write_json(self, path: str) -> None:
        common.write_json(path, self.to_json())

    def table(self) -> str:
        """The verdict table: one row a result, nothing cut. The test's name
        comes last on its row and a reason on the line below it, so every
        name and reason can be read whole, however long."""
        rows = [(r.config, r.kind, r.suite, r.status.value.upper(), r.name, r.reason)
                for r in self.results]
        head = ("CONFIG", "KIND", "SUITE", "RESULT", "TEST")
        widths = [max([len(head[i])] + [len(row[i]) for row in rows]) for i in range(4)]
        out = [f"pmd-ptlock gate: linux {self.tree}"]

        def fmt(row):
            return "  ".join([str(row[i]).ljust(widths[i]) for i in range(4)] + [row[4]])

        for cfg, facts in self.info.items():
            if facts:
                out.append(f"  {cfg}: " + ", ".join(f"{k}={v}" for k, v in facts.items()))
        rule = "-" * min(120, sum(widths) + 2 * 4 + 40)
        out += [fmt(head).rstrip(), rule]
        for row in rows:
            out.append(fmt(row).rstrip())
            if row[5]:
                out.append(" " * (sum(widths[:3]) + 6) + "  reason: " + row[5])
        c = self.counts()
        out.append(rule)
        per_config = self.config_verdicts()
        if len(per_config) > 1:
            for cfg, (v, n) in per_config.items():
                out.append(f"  {cfg}: {v.upper()} ({n['pass']} passed, {n['fail']} failed, "
                           f"{n['skip']} skipped)")
        out.append(f"VERDICT: {self.verdict.upper()}  ({c['pass']} passed, {c['fail']} failed, "
                   f"{c['skip']} skipped)")
        out.append(f"{c['pass']} passed, {c['fail']} failed, {c['skip']} skipped")
        return "\n".join(out)
