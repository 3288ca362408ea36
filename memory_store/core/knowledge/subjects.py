"""What a knowledge item is about, written so that every later item about the same thing is found and recognised.

    file:<path>#<key path>      a setting a file gives a value (`file:config/app.yaml#database.port`)
    name:<key path>             a setting named in words (`name:reminders.leadtimehours`), found in any file
    words:<words>               a value said in words about something unnamed (`words:dev port server`)
    env:<VARIABLE>@<procedure>  a variable a command sets, for that command alone
    run:<procedure>             a command that worked (core/knowledge/commands.py procedure_key)
    rule:<words>                a rule or a decision, by what it is about

A key path is normalized (`normalize_name`): lowercase, any separator between segments (`.`, `:`, `__`, `/`, `->`) a
dot, and the words inside a segment joined by `_` however they were written (`LeadTimeHours`, `lead-time-hours`,
`LEAD_TIME_HOURS`), so that `Reminders:LeadTimeHours`, `reminders.lead_time_hours` and the JSON key under
`"Reminders"` meet. The rules of sameness are in core/knowledge/current.py.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..terms import STOPWORDS, normalize_term, words

FILE, NAME, WORDS, ENV, RUN, RULE = "file:", "name:", "words:", "env:", "run:", "rule:"
_SEPARATORS = re.compile(r"::|->|__|[.:/\[\]]+")


def _segment(part: str) -> str:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", part))
    return "_".join(word.lower() for word in re.split(r"[\W_]+", spaced) if word)


def normalize_name(name: str) -> str:
    """A setting's key path as compared: `Booking:DefaultSlotMinutes` → "booking.default_slot_minutes"."""
    parts = [_segment(part) for part in _SEPARATORS.split(name.strip("`'\"@$-"))]
    return ".".join(part for part in parts if part)


@lru_cache(maxsize=8192)  # sameness asks it of the same names thousands of times per prompt (current.py _around)
def name_words(name: str) -> tuple[str, ...]:
    """The words of a setting's name: `PUSH_WORKER_CONCURRENCY` → push, worker, concurrency; `maxRetryCount` → max,
    retry, count (light-stemmed, as a question's words are)."""
    return tuple(normalize_term(word) for part in _SEPARATORS.split(name) for word in _segment(part).split("_")
            if len(word) > 1)


def word_set(text: str) -> list[str]:
    """Content words, light-stemmed and sorted: how `words:` and `rule:` subjects are written."""
    return sorted({normalize_term(w) for w in words(text) if w not in STOPWORDS and len(w) > 2
                   and not any(ch.isdigit() for ch in w)})


def of_file(path: str, key_path: str) -> str:
    return f"{FILE}{path}#{normalize_name(key_path)}"


def of_name(name: str) -> str:
    return f"{NAME}{normalize_name(name)}"


def of_words(about: list[str]) -> str:
    return WORDS + " ".join(sorted({normalize_term(w) for w in about}))


def of_rule(about: list[str]) -> str:
    return RULE + " ".join(about)


def of_run(key: str) -> str:
    return f"{RUN}{key}"


def of_env(variable: str, procedure: str) -> str:
    return f"{ENV}{variable.lower()}@{procedure}"


def bag(subject: str) -> set[str]:
    """The words of a `words:` or `rule:` subject."""
    return set(subject.split(":", 1)[-1].split())
