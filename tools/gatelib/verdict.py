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
        mark = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}
        rows = [(r["config"], r["kind"], r["suite"], r["name"], mark[r["status"]], r["reason"])
                for r in self.results]
        head = ("CONFIG", "KIND", "SUITE", "TEST", "RESULT", "REASON")
        widths = [max([len(head[i])] + [len(row[i]) for row in rows]) for i in range(5)]
        widths = [min(w, 64) for w in widths]
        out = []

        def fmt(row):
            cells = [str(row[i])[:widths[i]].ljust(widths[i]) for i in range(5)]
            return "  ".join(cells) + ("  " + row[5][:110] if row[5] else "")

        out.append(f"pmd-ptlock gate: linux {self.tree}")
        for cfg, facts in self.info.items():
            if facts:
                out.append(f"  {cfg}: " + ", ".join(f"{k}={v}" for k, v in facts.items()))
        out.append(fmt(head).rstrip())
        out.append("-" * min(160, sum(widths) + 2 * 5 + 6))
        for row in rows:
            out.append(fmt(row).rstrip())
        c = self.counts()
        out.append("-" * min(160, sum(widths) + 2 * 5 + 6))
        per_config = self.config_verdicts()
        if len(per_config) > 1:
            for cfg, (v, n) in per_config.items():
                out.append(f"  {cfg}: {v.upper()} ({n['pass']} passed, {n['fail']} failed, "
                           f"{n['skip']} skipped)")
        out.append(f"VERDICT: {self.verdict.upper()}  ({c['pass']} passed, {c['fail']} failed, "
                   f"{c['skip']} skipped)")
        out.append(f"{c['pass']} passed, {c['fail']} failed, {c['skip']} skipped")
        return "\n".join(out)
