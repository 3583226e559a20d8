"""Counts in words, for the one-line summaries commands and pages print: "1 run", "3 runs", "1 query".
Pure Python, no Django."""

from __future__ import annotations

# Nouns whose plural is not the singular plus "s" (or "y" -> "ies" after a consonant), or that do not change.
IRREGULAR = {"can't judge": "can't judge", "x": "x"}


def plural(word: str) -> str:
    if word in IRREGULAR:
        return IRREGULAR[word]
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def counted(n: int, word: str, many: str | None = None) -> str:
    """`n` and the word, singular for exactly one: counted(1, "query") == "1 query"; a last word
    (counted(2, "graded query")) is the one made plural; `many` names an irregular plural."""
    if n == 1:
        return f"{n} {word}"
    head, _, last = word.rpartition(" ")
    return f"{n} {many or ((head + ' ') if head else '') + plural(last)}"
