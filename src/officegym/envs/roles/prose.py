"""Prose briefs for the roles: surface forms as data, numbers in words, documents, a calculator.

A role states each requirement in one sentence drawn from a pool of surface forms (`Forms`); some
forms of every kind are held out, so a task of the `heldout_wording` subset is written only in forms
that no trained task uses. Every form drawn is recorded as a feature ("budget:7"), as the workplace
generator records its wording features, so a split can be checked and a score read per form.
"""

from __future__ import annotations

import ast
import hashlib
import math
import operator
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

TRAINED, HELDOUT = "trained", "heldout_wording"
SUBSETS = (TRAINED, HELDOUT)
# A task whose id hashes into the top HELDOUT_SHARE of [0, 1) is written in held-out forms. The
# split of a generated role task is the same hash of its id (sdg.splits.SplitPlan.assign), so these
# tasks land in test for any split whose test share is at least this (tests check both).
HELDOUT_SHARE = 0.10


def id_fraction(key: str) -> float:
    """The task id's position in [0, 1), as the split assignment hashes it."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") / 2**64


def subset_of_id(key: str) -> str:
    return HELDOUT if id_fraction(key) >= 1 - HELDOUT_SHARE else TRAINED


@dataclass(frozen=True)
class Forms:
    """The surface forms of one kind of statement; `heldout` ones never appear in trained tasks.
    Feature names number the forms in order, trained first: "<kind>:<index>"."""

    kind: str
    trained: tuple[str, ...]
    heldout: tuple[str, ...] = ()

    def pick(self, rng: random.Random, subset: str) -> tuple[str, str]:
        """(feature, form) from the subset's pool (trained forms where none is held out)."""
        pool = self.heldout if subset == HELDOUT and self.heldout else self.trained
        i = rng.randrange(len(pool))
        index = i + (len(self.trained) if pool is self.heldout else 0)
        return f"{self.kind}:{index}", pool[i]

    def features(self, subset: str) -> list[str]:
        n = len(self.trained)
        if subset == HELDOUT:
            return [f"{self.kind}:{n + i}" for i in range(len(self.heldout))]
        return [f"{self.kind}:{i}" for i in range(n)]


_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def words(n: int) -> str:
    """A non-negative integer below a billion in English words ("one hundred eighty-two thousand")."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + words(rest))
    for size, name in ((10**6, "million"), (1000, "thousand")):
        if n >= size:
            rest = n % size
            return words(n // size) + f" {name}" + ("" if rest == 0 else " " + words(rest))
    raise ValueError(n)


def trim(x: float) -> str:
    """A decimal without trailing zeros (0.9970 -> "0.997")."""
    return f"{x:.6f}".rstrip("0").rstrip(".")


# -- documents: e-mails, meeting notes, tickets, looked up by id


def doc_id(rng: random.Random, kind: str) -> str:
    prefix = {"email": "MAIL", "notes": "NOTES", "ticket": "PLAT", "memo": "MEMO"}[kind]
    return f"{prefix}-{rng.randint(100, 9999)}"


def render_document(kind: str, doc: str, people: list[str], title: str, lines: list[str], day: str) -> str:
    """A document's text: a header a reader recognises, then its sentences."""
    if kind == "email":
        head = [f"From: {people[0]}", f"To: {people[1]}", f"Date: {day}", f"Subject: {title}", ""]
        return "\n".join([*head, " ".join(lines), "", people[0].split()[0]])
    if kind == "notes":
        head = [f"{title} - {day}", f"Attendees: {', '.join(people)}"]
        return "\n".join(head + [f"- {x}" for x in lines])
    return "\n".join([f"{doc} [{title}] opened by {people[0]} on {day}", *lines])


PEOPLE = ("Ana Ruiz", "Ben Okafor", "Chloe Martin", "Dev Patel", "Elif Kaya", "Femi Adeyemi", "Grace Liu",
          "Hugo Blanc", "Ines Duarte", "Jonas Berg", "Kira Sato", "Liam Walsh", "Maya Cohen", "Noor Haddad")
DAYS = ("Monday 3 March", "Tuesday 4 March", "Wednesday 5 March", "Thursday 6 March", "Friday 7 March",
        "Monday 10 March", "Tuesday 11 March")


N_DOCUMENTS = (0, 1, 1, 1, 2, 2, 2, 3, 3, 3)  # per level: documents beside the brief
DOC_KINDS = ("email", "notes", "ticket")


def document_kinds(rng: random.Random, difficulty: int) -> list[str]:
    """The kinds of the documents a brief of this level spreads its statements over."""
    return rng.sample(DOC_KINDS, N_DOCUMENTS[difficulty - 1])


def document_ids(rng: random.Random, kinds: Sequence[str]) -> list[str]:
    """One distinct id per document kind drawn."""
    ids: list[str] = []
    for k in kinds:
        i = doc_id(rng, k)
        while i in ids:
            i = doc_id(rng, k)
        ids.append(i)
    return ids


def spread(rng: random.Random, said: Sequence[tuple[str, bool]], n_documents: int) -> list[list[str]]:
    """The sentences by place: [0] the brief, [1..n] the documents. Each document holds at least one
    statement that counts (flag True) while there are enough; the rest, and every distractor, go anywhere."""
    places: list[list[str]] = [[] for _ in range(n_documents + 1)]
    for j, sentence in enumerate(s for s, counts in said if counts):
        places[1 + j if j < n_documents else rng.randrange(n_documents + 1)].append(sentence)
    for sentence in (s for s, counts in said if not counts):
        places[rng.randrange(n_documents + 1)].append(sentence)
    return places


def write_documents(rng: random.Random, kinds: Sequence[str], ids: Sequence[str], places: Sequence[list[str]],
                    people: Sequence[str], titles: dict[str, Sequence[str]], features: list[str]) -> dict[str, str]:
    """Each document's text by id, from its sentences (`places[1:]`), three of `people`, a title and a day."""
    documents = {}
    for k, i, lines in zip(kinds, ids, places[1:]):
        documents[i] = render_document(k, i, rng.sample(list(people), 3), rng.choice(titles[k]), lines, rng.choice(DAYS))
        features.append(f"document:{k}")
    return documents


def read_document(documents: dict[str, str], doc: Any) -> str | None:
    """A document's text by id (case and spaces forgiven), None when there is none."""
    if not isinstance(doc, str):
        return None
    key = doc.strip().upper()
    return documents.get(key)


# -- the calculator: arithmetic on numbers only, parsed with ast (never eval)

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow, ast.Mod: operator.mod, ast.FloorDiv: operator.floordiv}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
MAX_EXPRESSION = 500


class CalculatorError(ValueError):
    pass


def calculate(expression: str) -> float | int:
    """The value of an arithmetic expression (+ - * / // % **, parentheses, decimals, 1,200-style
    thousands, a trailing %); CalculatorError with the reason for anything else."""
    if len(expression) > MAX_EXPRESSION:
        raise CalculatorError(f"expression longer than {MAX_EXPRESSION} characters")
    text = expression.replace("_", "").replace("$", "").replace("%", "/100")
    text = "".join(c for c in text if c != ",")  # 1,200 -> 1200: no commas in arithmetic
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise CalculatorError(f"cannot read {expression!r} as arithmetic") from None
    try:
        value = _value(tree.body, 0)
    except (ZeroDivisionError, OverflowError, RecursionError):
        raise CalculatorError(f"{expression!r} has no finite value") from None
    if isinstance(value, complex) or (isinstance(value, float) and not math.isfinite(value)):
        raise CalculatorError(f"{expression!r} has no finite value")
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 2**53 else value


def _value(node: ast.AST, depth: int) -> float | int:
    if depth > 50:
        raise CalculatorError("expression nested too deeply")
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left, depth + 1), _value(node.right, depth + 1)
        if isinstance(node.op, ast.Pow) and (abs(right) > 100 or abs(left) > 1e6):
            raise CalculatorError("exponent too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand, depth + 1))
    raise CalculatorError("only numbers, + - * / // % ** and parentheses are allowed")
