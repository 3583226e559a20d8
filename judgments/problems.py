"""What was wrong with an input, line by line: `Problem` (line, field, message) and `FormatError` (a file's
problems). No Django imports. The file formats raise them, the importers, the REST API (a 400 listing
them) and the capture wing report them, so they belong to no wing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MAX_PROBLEMS = 50  # a bad file reports its first problems, then how many more were cut


@dataclass(frozen=True, slots=True)
class Problem:
    line: int  # 1-based line number; 0 = the file as a whole
    field: str  # "grade", "docid", "score", "line", "encoding", "file", a JSON key, a CSV column...
    message: str

    def format(self, name: str) -> str:
        where = f"{name}:{self.line}" if self.line else name
        return f"{where}: {self.field}: {self.message}"


class FormatError(Exception):
    """A file had problems; ``problems`` lists them (at most MAX_PROBLEMS + 1), ``name`` is the file."""

    def __init__(self, name: str, problems: Sequence[Problem]):
        self.name = name
        self.problems = list(problems)
        super().__init__(name, self.problems)

    def __str__(self) -> str:
        return "\n".join(p.format(self.name) for p in self.problems)

    def __reduce__(self):
        return (type(self), (self.name, self.problems))
