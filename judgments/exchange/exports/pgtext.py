"""SQL that writes values exactly as the Python writers do, so PostgreSQL can format the big exports.

Tests compare the database's text with the Python writer's on random values, byte for byte.

- Floats: PostgreSQL's float8 text (with extra_float_digits > 0, which `FLOAT_SETUP` sets for the
  transaction) prints the shortest exact digits, as Python's `repr` (used by `json.dumps` and `csv`)
  does, for every finite |v| < 1e15; the two differ there only on integral values (1 vs 1.0), which
  `python_float` corrects. Outside that range (1e16, NaN, Infinity) they differ in ways SQL cannot
  mend cheaply, so a query tests `float_in_range` and hands such rows to the Python writer.
- Strings: PostgreSQL's `to_json(text)` equals `json.dumps(s)` for printable ASCII (`PLAIN_ASCII`);
  the other strings, and CSV cells that need quoting or the formula guard (`CSV_SPECIAL` finds them),
  are encoded in Python (`csv_cell`, json.dumps) once per distinct string and handed to the query as a
  lookup table (`encoded_lookup`).
"""

from __future__ import annotations

FLOAT_SETUP = ("SELECT set_config('extra_float_digits', '1', true)",)
FLOAT_RANGE = "1e15"
# Strings that to_json writes as json.dumps (ensure_ascii) does.
PLAIN_ASCII = "^[ -~]*$"
# Ids (which hold no whitespace) whose CSV cell is not the id itself: csv_line quotes a cell with a comma
# or a double quote and guards one that starts like a formula (a few numbers such as -1 match too and
# are encoded for nothing). SQL that writes CSV lines takes these cells from csv_cell.
CSV_SPECIAL = r"""[,"]|^'*[-=+@]"""


def csv_cell(text: str) -> str:
    """One cell as csv_line writes it in a line without a carriage return."""
    # The file formats are imported when a CSV is asked for: JSON lines and qrels start without them.
    from judgments.exchange.formats.spreadsheet import csv_line

    return csv_line([text, ""])[:-2]


def float_in_range(expr: str) -> str:
    """SQL: true when `python_float(expr)` is exact (false for NaN and infinities, NULL for NULL)."""
    return f"abs({expr}) < {FLOAT_RANGE}"


def python_float(expr: str) -> str:
    """SQL text of the float8 `expr` as Python's `repr` writes it, for finite |expr| < 1e15."""
    return f"CASE WHEN ({expr}) = trunc({expr}) THEN ({expr})::text || '.0' ELSE ({expr})::text END"


def encoded_lookup(alias: str) -> str:
    """A FROM item `alias(id, text)` made of two array parameters: ids and their encoded texts."""
    return f"unnest(%s::bigint[], %s::text[]) AS {alias}(id, text)"
