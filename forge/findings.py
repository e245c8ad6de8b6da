"""The finding type shared by the linter, the tool-format checker and the compiler."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem in tool source, phrased so the model can fix it."""

    line: int
    col: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}:{self.col} [{self.code}] {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {"line": self.line, "col": self.col, "code": self.code, "message": self.message}


def format_findings(findings: list[Finding]) -> str:
    return "\n".join(str(f) for f in findings)
