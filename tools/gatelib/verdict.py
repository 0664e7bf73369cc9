"""Collect result rows, print the verdict table, write the JSON."""

from . import common


class Verdict:
    def __init__(self, tree_version):
        self.tree = tree_version
        self.results = []
        self.info = {}          # per-config facts (key symbols, timings)

    def add(self, config, kind, suite, name, status, reason=""):
        assert status in ("pass", "fail", "skip"), status
        self.results.append({"config": config, "kind": kind, "suite": suite, "name": name,
                             "status": status, "reason": reason or ""})

    def add_rows(self, config, kind, rows):
        for suite, name, status, reason in rows:
            self.add(config, kind, suite, name, status, reason)

    def counts(self):
        c = {"pass": 0, "fail": 0, "skip": 0}
        for r in self.results:
            c[r["status"]] += 1
        return c

    def config_verdicts(self):
        """{config: (verdict, counts)} in the order the configurations ran."""
        out = {}
        for cfg in list(self.info) + [r["config"] for r in self.results]:
            if cfg in out:
                continue
            rows = [r for r in self.results if r["config"] == cfg]
            c = {s: sum(r["status"] == s for r in rows) for s in ("pass", "fail", "skip")}
            tested = any(r["status"] == "pass" and r["kind"] != "console" for r in rows)
            out[cfg] = ("pass" if c["fail"] == 0 and tested else "fail", c)
        return out

    @property
    def verdict(self):
        # Every configuration passed on its own (no failure, something tested:
        # a clean console alone is not a pass), and there was one at least.
        per = self.config_verdicts()
        return "pass" if per and all(v == "pass" for v, _ in per.values()) else "fail"

    def to_json(self):
        return {"verdict": self.verdict, "tree": self.tree, "results": self.results,
                "configs": self.info}

    def write_json(self, path):
        common.write_json(path, self.to_json())

    def table(self):
        """The verdict table: one row a result, nothing cut. The test's name
        comes last on its row and a reason on the line below it, so every
        name and reason can be read whole, however long."""
        mark = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}
        rows = [(r["config"], r["kind"], r["suite"], mark[r["status"]], r["name"], r["reason"])
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
