"""Surface forms: one template phrasing said many ways, without touching what it asks.

A phrasing ("Send {first} an email with the subject '{subject}' saying '{body}'") is composed with
independent surface features drawn per task: a sentence frame (command, polite request, question,
informal note), a synonym for its leading verb, the quotation marks around quoted text, lower-case
first names, an informal all-lower-case text, and a typo in one ordinary word. Features change only
the template's own words: slot values (ids, names, message texts, dates) are filled in after, so
the ground truth computed for the plan stays right. A Wording records the features, so a split can
hold whole features out of training (`FEATURES` lists them) and measure transfer to them.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

# Frames. "any" frames wrap any sentence; "imperative" ones need a base that starts with a command
# verb ("Cancel my first meeting tomorrow"), since they turn it into a request or a question.
_ANY_FRAMES: dict[str, str] = {
    "plain": "{q}",
    "hey": "Hey, {lq}",
    "when_you_can": "When you get a chance: {lq}",
    "quick_one": "Quick one: {q}",
    "thanks": "{q} Thanks!",
    "for_you": "Something for you - {lq}",
    "note": "Note to my assistant: {q}",
}
_IMPERATIVE_FRAMES: dict[str, str] = {
    "please": "Please {lq}",
    "please_end": "{qs}, please.",
    "could_you": "Could you {lqs}?",
    "can_you_pls": "can you pls {lqs}",
    "need_you_to": "I need you to {lq}",
    "id_like": "I'd like you to {lq}",
    "go_ahead": "Go ahead and {lq}",
    "would_you": "Would you {lqs} for me?",
}
FRAMES = {**_ANY_FRAMES, **_IMPERATIVE_FRAMES}

# Leading verbs and synonyms that keep every phrasing starting with them grammatical and unambiguous.
VERBS: dict[str, tuple[str, ...]] = {
    "Delete": ("Remove", "Get rid of", "Trash"),
    "Remove": ("Delete", "Get rid of"),
    "Cancel": ("Call off", "Drop"),
    "Schedule": ("Set up", "Arrange", "Put in"),
    "Book": ("Schedule", "Set up", "Arrange"),
    "Send": ("Shoot",),
    "Forward": ("Pass on", "Send on"),
    "Reply": ("Respond",),
    "Plot": ("Chart", "Graph"),
    "Change": ("Update", "Modify"),
    "Update": ("Change",),
    "Reassign": ("Hand over",),
    "Move": ("Shift",),
}
QUOTES: dict[str, tuple[str, str]] = {"single": ("'", "'"), "double": ('"', '"'), "curly": ("\u201c", "\u201d")}

# Every feature value a split may hold out, as "kind:value".
FEATURES: tuple[str, ...] = tuple(dict.fromkeys(
    [f"frame:{f}" for f in FRAMES if f != "plain"] + [f"verb:{s}" for syns in VERBS.values() for s in syns]
    + [f"quotes:{q}" for q in QUOTES if q != "single"] + ["names:lower", "case:lower", "typo:yes"]))

# Words a typo must not touch: they carry the request's logic or name a value in the tables.
_KEEP = frozenset((
    "not", "never", "only", "more", "less", "fewer", "than", "before", "after", "since", "between", "under",
    "over", "above", "below", "until", "each", "every", "latest", "last", "first", "next", "most", "least",
    "otherwise", "nothing", "anything", "don't", "haven't", "doesn't", "didn't", "completed", "qualified",
    "proposal", "backlog", "review", "progress", "lost", "won", "lead", "leads", "minutes", "minute",
    "seconds", "morning", "afternoon", "evening", "today", "tomorrow", "yesterday", "weeks", "week", "month",
    "days", "hours", "overdue", "upcoming", "higher", "lower", "earlier", "later", "majority",
))
_WORD = re.compile(r"\b[a-z]{5,}\b")
# Quoted text in a phrasing: a quote not inside a word or next to a slot ("Alex's", "{first}'s" and
# "don't" are apostrophes)
_QUOTED = re.compile(r"(?<![\w}])'([^'\n]*?)'(?![\w{])")
_SLOT = re.compile(r"\{[a-z0-9_]+\}")
_NAME_SLOTS = ("first", "second")


@dataclass(frozen=True)
class Wording:
    """The surface features of one query."""

    phrasing: int
    frame: str = "plain"
    verb: str = ""          # the synonym used for the leading verb, "" when the base's own
    quotes: str = "single"
    names: str = "as_is"    # "lower": first names in lower case
    case: str = "as_is"     # "lower": the template's words in lower case (informal)
    typo: bool = False

    def features(self) -> tuple[str, ...]:
        """This wording's feature values in FEATURES' notation (the defaults are not features)."""
        out = [f"frame:{self.frame}"] if self.frame != "plain" else []
        out += [f"verb:{self.verb}"] if self.verb else []
        out += [f"quotes:{self.quotes}"] if self.quotes != "single" else []
        out += ["names:lower"] if self.names == "lower" else []
        out += ["case:lower"] if self.case == "lower" else []
        out += ["typo:yes"] if self.typo else []
        return tuple(out)

    def key(self) -> str:
        """A short id: the phrasing index and the features, "p1" for a base phrasing as written."""
        return ".".join([f"p{self.phrasing}", *self.features()])


# Other command verbs that start phrasings (a frame may wrap them; they have no synonym here).
_COMMANDS = frozenset({"Make", "Create", "Email", "Set", "Mark", "Add", "Put", "Push", "Clear", "Rename", "Find",
                       "Write", "Answer", "Clean", "Give", "Tell", "Hand", "Replace", "Look", "Compare"})


def _leading_verb(text: str) -> str | None:
    word = text.split(" ", 1)[0]
    return word if word in VERBS else None


def _imperative(text: str) -> bool:
    """The base starts with a command verb we know (frames that make it a request need one)."""
    first = text.split(" ", 1)[0]
    return first in VERBS or first in _COMMANDS


def draw(phrasing: str, index: int, r: random.Random, plain: float = 0.25) -> Wording:
    """Surface features for one query. With probability `plain` the phrasing stays as written."""
    if r.random() < plain:
        return Wording(index)
    imperative = _imperative(phrasing)
    frames = list(FRAMES) if imperative else list(_ANY_FRAMES)
    frame = r.choice(frames)
    verb = ""
    lead = _leading_verb(phrasing)
    if lead and r.random() < 0.5:
        verb = r.choice(VERBS[lead])
    quotes = r.choice(list(QUOTES)) if _QUOTED.search(phrasing) else "single"
    names = "lower" if any("{" + s + "}" in phrasing for s in _NAME_SLOTS) and r.random() < 0.3 else "as_is"
    case = "lower" if r.random() < 0.15 else "as_is"
    typo = r.random() < 0.2 and bool(_typo_candidates(phrasing))
    return Wording(index, frame, verb, quotes, names, case, typo)


def _typo_candidates(text: str) -> list[re.Match]:
    """Ordinary lower-case words of the template's own text (outside slots and quotes)."""
    outside = _SLOT.sub(lambda m: " " * len(m.group()), text)
    outside = _QUOTED.sub(lambda m: " " * len(m.group()), outside)
    return [m for m in _WORD.finditer(outside) if m.group() not in _KEEP]


def _typo(word: str, r: random.Random) -> str:
    i = r.randrange(1, len(word) - 2)
    kind = r.randrange(3)
    if kind == 0:  # two letters swapped
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 1:  # a letter dropped
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]  # a letter doubled


def render(phrasing: str, slots: dict, wording: Wording, r: random.Random) -> str:
    """The query: the phrasing with `wording`'s features, then its slots filled. `r` only places the
    typo (drawn after the wording, so a Wording alone does not fix the text)."""
    text = phrasing
    if wording.typo:
        spots = _typo_candidates(text)
        if spots:
            m = r.choice(spots)
            text = text[:m.start()] + _typo(m.group(), r) + text[m.end():]
    if wording.verb:
        lead = _leading_verb(text)
        if lead:
            text = wording.verb + text[len(lead):]
    if wording.quotes != "single":
        left, right = QUOTES[wording.quotes]
        text = _QUOTED.sub(lambda m: left + m.group(1) + right, text)
    if wording.case == "lower":
        text = _lower_outside_slots(text)
    text = _frame(text, wording.frame)
    values = dict(slots)
    if wording.names == "lower":
        for s in _NAME_SLOTS:
            if isinstance(values.get(s), str):
                values[s] = values[s].lower()
    query = text.format(**values)
    return query if wording.case == "lower" or wording.frame == "can_you_pls" else query[:1].upper() + query[1:]


def _lower_outside_slots(text: str) -> str:
    """Lower-case the template's words but not slot names or quoted literals ('Overdue tasks' is an
    argument value)."""
    parts = re.split(r"(\{[a-z0-9_]+\}|(?<![\w}])'[^'\n]*?'(?![\w{])|\"[^\"]*\"|\u201c[^\u201d]*\u201d)", text)
    return "".join(p if i % 2 else _lower_words(p) for i, p in enumerate(parts))


def _lower_words(text: str) -> str:
    # Capitalised single words that name table values (Backlog, In Review, Won) keep their case.
    return re.sub(r"\b[A-Z][a-z']*\b", lambda m: m.group() if m.group() in _VALUE_WORDS else m.group().lower(), text)


_VALUE_WORDS = frozenset({"Backlog", "In", "Progress", "Review", "Completed", "Won", "Lost", "Lead", "Qualified",
                          "Proposal", "CRM", "I", "I'm", "I'd", "I've", "FW", "RE"})


def _frame(text: str, frame: str) -> str:
    pattern = FRAMES[frame]
    if pattern == "{q}":
        return text
    stripped = text.rstrip(" .!?")
    q = text if text[-1:] in ".?!" else text + "."
    # str.format inserts the values as they are: the slots inside them stay for render() to fill
    return pattern.format(q=q, lq=_lower_first(q), qs=stripped, lqs=_lower_first(stripped))


def _lower_first(text: str) -> str:
    """"Cancel my..." -> "cancel my..."; a slot ("{first} is...") or "I" stays as it is."""
    if not text or text[0] == "{" or re.match(r"I\b|I'", text) or text[:3].isupper():
        return text
    return text[0].lower() + text[1:]
