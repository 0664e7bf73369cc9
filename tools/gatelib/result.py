"""The one result type: what every parser (KTAP, kselftest TAP, console
scan), the skip rules, the verdict and the mutation classifier pass around.
In the style of kunit_tool's kunit_parser.TestStatus: a status enum and
typed records, not strings and positional tuples."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any, Dict, NamedTuple


class Status(str, enum.Enum):
    """A result's status. A str, so JSON and comparisons with the plain
    strings "pass", "fail", "skip" keep working."""
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"

    def __str__(self) -> str:
        return self.value


class Row(NamedTuple):
    """One result as a parser reports it, before it is given a
    configuration and a kind: a KUnit case, a kselftest subtest or program,
    or a console finding."""
    suite: str
    name: str
    status: Status
    reason: str = ""


@dataclass(frozen=True)
class Result:
    """One row of the verdict: a Row of one configuration and kind
    ("kunit", "kselftest" or "console")."""
    config: str
    kind: str
    suite: str
    name: str
    status: Status
    reason: str = ""

    @classmethod
    def of(cls, config: str, kind: str, row: Row) -> "Result":
        return cls(config, kind, row.suite, row.name, Status(row.status), row.reason or "")

    def to_json(self) -> Dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        return d


def row(suite: str, name: str, status: str, reason: str = "") -> Row:
    """A Row, its status checked."""
    return Row(suite, name, Status(status), reason or "")
