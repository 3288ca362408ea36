"""The words of a text as recall compares them: lower-cased words, stopwords, a light stemmer.

Shared vocabulary of ranking, sentences and versions (and below all three), so that a memory's
words and a query's words are cut and normalized the same way everywhere.
"""

from __future__ import annotations

import functools
import re

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
    few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
    him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
    mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't
    she she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those through to too under until up very was
    wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who who's
    whom why why's with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    also just like get got really would could will shall may might must yeah yes ok okay please thanks thank
    tell know think remember recall said say says did does done kind sort thing things something anything
    """.split()
)

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

def words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


@functools.lru_cache(maxsize=1 << 16)  # a prompt checks a few thousand words, mostly the same ones
def normalize_term(word: str) -> str:
    """A light stemmer for coverage checks (FTS5 applies the real Porter stemmer): "release",
    "releases", "released" and "releasing" all become "releas"."""
    for suffix in ("'s", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word
