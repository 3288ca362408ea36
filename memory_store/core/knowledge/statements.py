"""What a prompt, an answer or a note states, one clause at a time: values, rules and decisions, how-tos.

A clause gives a value when it names a setting and gives it one (`Reminders:LeadTimeHours = 48`, "set
PUSH_WORKER_CONCURRENCY to 8", "@limit is 8 now"), or when it changes something in words ("we moved the dev server
from port 8123 to port 9090", "bumped the version to 1.5.0", "lower it to 45", "media jobs now get 540 seconds"),
or when it says what something is ("the timeout is 30 s"). A count in passing ("the 10 checks are finished", "users
get the push three times") gives nothing: the value must be what the clause says the thing is or becomes.

Every clause also has a modality, read from its form alone, so that only what is settled can become current:

    stated     said as so ("is now", "bumped to", "from now on"), or set by the user ("make it 40")
    asked      a question ("should we retry 5 times?")
    proposed   a proposal, a hypothetical, an intention not yet carried out ("we could bump it to 100 if …",
               "you could use Redis instead", "I'll raise it to 45")
    negated    said not to be ("please don't set MAX_UPLOAD_MB to 50", "we didn't decide on …")
    revoked    a rule taken back ("we no longer squash merges")

Every pattern is tried at word starts only and each clause is bounded: linear in the text, however hostile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import islice

from ...shared.secrets import is_secret_name
from .. import sentences
from ..terms import STOPWORDS, normalize_term, words

MAX_CLAUSE_CHARS = 500  # a longer "sentence" is a pasted log or a table: no statement of ours
MAX_ITEMS = 12  # per text
MIN_RULE_WORDS = 5  # a rule says what it is about
VALUES_PER_CLAUSE = 16  # a clause with more is a list or a dump, not a statement of one value
NEAR_VALUE_CHARS = 80  # what is read before a value for the words that make it a statement ("is now", "bumped … to")

# --- the pieces of a clause ----------------------------------------------------------------------------------------

# A value in words: a number with what it counts or measures, a time, a version, a size, a money amount, a word with a
# digit (an instance type, a host), a duration expression (`2 * 60`), a quoted literal.
_NUMBER = r"[$€£¥]?\d(?:[\d_]|,(?=\d{3}))*(?:\.\d+)?(?:e-?\d+)?"
_SPELLED = (r"(?:(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|"
            r"sixty|ninety|a hundred|a thousand)\s[a-z]{3,15}|an?\s(?:second|minute|hour|day|week|fortnight|month|"
            r"quarter|year))")
VALUE = (rf"(?:`[^`\n]{{1,60}}`|\"[^\"\n]{{1,60}}\"|'[^'\n]{{1,60}}'|\d{{1,2}}:\d{{2}}(?:-\d{{1,2}}:\d{{2}})?(?:\s?UTC)?|"
         rf"{_SPELLED}|"
         r"[\^~>=<]{1,2}v?\d+(?:\.\d+)+[\w.\-+]*|v?\d+\.\d+\.\d+[\w.\-+]*|"
         rf"{_NUMBER}(?:\s?[*x]\s?\d+)*(?:\s?(?:%|[A-Za-zµ€$]{{1,12}}(?:\s(?:per|/)\s?(?:\d+\s)?[a-z]{{1,10}})?))?|"
         r"[A-Za-z][\w\-]{0,30}\d[\w.\-/:]{0,40})")
_VALUE = re.compile(rf"(?<![\w.\-/])(?:{VALUE})(?![\w/]|\.\w)")
# A setting named in words: an identifier (snake_case, a dotted or colon path, camelCase, SHOUTING_CASE with an
# underscore, an @attribute, a --flag), or any name in backticks.
_IDENT = (r"(?:`(?P<quoted>[^`\s]{2,100})`|(?P<ident>--?[a-z][\w\-]{1,60}|@?[A-Za-z_$][\w$]{0,60}"
          r"(?:(?:\.|::|:|->|/)[A-Za-z_$][\w$]{0,60}){0,6}))")
_SETTING = re.compile(
    rf"(?<![\w.$@/\-]){_IDENT}(?![\w$])\s{{0,3}}(?:(?P<op>:=|=>|=|:)|"
    rf"(?P<word_op>\s(?:is|are|stays|remains|defaults to|of|at|to|now)(?:\s(?:now|still|currently|set to|at))?)|"
    rf"(?P<from>\sfrom\s(?P<old>{VALUE})\sto))?\s{{0,3}}"
    rf"(?P<value>{VALUE})(?![\w/]|\.\w)")
_PLAIN_WORD_VALUE = re.compile(r"(?<![\w.$@/\-])" + _IDENT +
                               r"(?![\w$])\s{0,3}(?P<op>:=|=|:)\s{0,3}(?P<value>[A-Za-z][\w.\-]{1,40})\b")
# A change said in words, and a value said to be what something is now.
_CHANGE = re.compile(r"\b(?:mov(?:e|ed)|bump(?:ed)?|rais(?:e|ed)|lower(?:ed)?|increas(?:e|ed)|decreas(?:e|ed)|"
                     r"reduc(?:e|ed)|dropp?(?:ed)?|cut|chang(?:e|ed)|switch(?:ed)?|set|updat(?:e|ed)|upgrad(?:e|ed)|"
                     r"downgrad(?:e|ed)|pin(?:ned)?|extend(?:ed)?|shorten(?:ed)?|doubled?|halved?|capp?(?:ed)?|"
                     r"limit(?:ed)?|tighten(?:ed)?|relax(?:ed)?|make|made|turn(?:ed)?|adjust(?:ed)?|tun(?:e|ed)|push(?:ed)?|"
                     r"shift(?:ed)?|postpon(?:e|ed)|resched(?:ule|uled)|"
                     r"(?:go|goes|going|went|gone) (?:up|down|back))\b",
                     re.IGNORECASE)
_NOW = re.compile(r"\b(?:now|from now on|nowadays|currently|these days|from here on|going forward)\b", re.IGNORECASE)
_COPULA = re.compile(r"\b(?:(?:is|are|stays|remains)(?:\s+(?:now|currently|still))?(?:\s+(?:kept|held|set|capped|limited|"
                     r"retained|stored|cached|allowed|scheduled|pinned|fixed|configured|run|sent|checked|rotated|"
                     r"refreshed|polled|retried)(?:\s+(?:for|to|at|after|every|within|up to|in|on))?)?|equals|"
                     r"defaults to|(?:runs|listens|serves|lives|sits) (?:at|every|on)(?:\s+[a-z]{2,12})?|"
                     r"points (?:to|at)(?:\s+[a-z]{2,12})?|expires? after|lasts?|takes?|waits?|gets?|uses?|needs?|"
                     r"allows?|keeps?|holds?|retains?)"
                     r"\s+(?:now\s+|currently\s+|still\s+|at\s+|set to\s+|about\s+|around\s+|every\s+|for\s+)?$|"
                     r"[A-Za-z)]:\s+$",  # "Rate limiting (Hammer): 20 messages per 10 seconds"
                     re.IGNORECASE)
# A clause whose subject is a pronoun ("it stays at 20", "lower it to 45"): about what the sentence before was about.
_PRONOUN_SUBJECT = re.compile(r"\b(?:it|this|that|they|these|those|both|which)\b(?:'s)?\s+(?:\w+\s+){0,2}$", re.I)
_TO = re.compile(r"\bto\s+(?:(?:the|a|an)\s+)?(?:[A-Za-z][\w\-]{0,20}\s+){0,2}$", re.IGNORECASE)
_FROM = re.compile(r"\bfrom\s+(?:(?:the|a|an)\s+)?(?:[A-Za-z][\w\-]{0,20}\s+){0,2}$", re.IGNORECASE)
# What a value said to have been comes after ("was 7 days", "ran on port 8123", "got 5 attempts").
_PAST = re.compile(r"\b(?:was|were|used to be|had been|had|ran|got|took|lasted)\s+"
                   r"(?:(?:set\s+)?(?:to|at|on|for|every|about|around)\s+)?(?:[A-Za-z][\w\-]{0,20}\s+){0,2}$", re.I)
_WAS = re.compile(r"\((?:was|previously|formerly|before:?|from)\s+(?P<old>[^()\n]{1,40})\)", re.IGNORECASE)

# The modality of a clause.
_QUESTION_START = re.compile(r"^\W*(?:what|which|how|why|when|where|who|whose|should|shall|could|can|would|do|does|"
                             r"did|is|are|was|were|have|has|any|might|may|will|whether)\b", re.IGNORECASE)
# A user's question typed without "?": "did we move it to 9090", "is it true that …", "can you check whether …" (a
# user's "can you set it to 30" is a request, which sets the value).
_USERS_QUESTION = re.compile(r"^\W*(?:did|does|do|is|are|was|were|has|have|had|isn't|aren't|didn't|doesn't|wasn't)\s"
                             r"|\b(?:whether|is it true|do you know if|do we know if|not sure if)\b", re.IGNORECASE)
_HEDGE = re.compile(r"\b(?:could|might|maybe|perhaps|possibly|consider(?:ing)?|suggest(?:s|ed|ion)?|"
                    r"propos(?:e|es|ed|al)|option(?:ally)?|alternatively|what about|how about|i'd|we'd|would|"
                    r"thinking (?:of|about)|plan(?:ning)? to|going to|i'll|i will|let me|let's see|if|in case|unless|"
                    r"once|later|eventually|someday|at some point|tbd|todo|for example|e\.g\.|say)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no longer|don't|do not|doesn't|does not|didn't|did not|isn't|aren't|wasn't|"
                       r"weren't|won't|shouldn't|mustn't|can't|cannot|avoid|without|nor)\b|n't\b", re.IGNORECASE)
_NOT_DECIDED = re.compile(r"\b(?:didn't|did not|haven't|have not|hasn't|has not|not yet|no decision|undecided|"
                          r"not decided|never decided|wasn't decided|nobody decided)\b", re.IGNORECASE)
# A rule taken back: by whoever kept it ("we no longer squash merges"), as no longer binding ("no longer required"),
# or by dropping it ("drop the rule", "lift the freeze"). A thing that can no longer happen is no revocation.
_REVOKED = re.compile(r"\b(?:(?:we|you|i|they|the team|nobody)(?:'ll|'re)?\s+(?:do\s+|will\s+|can\s+|should\s+|are\s+)?"
                      r"no longer|no longer (?:required|allowed|needed|necessary|mandatory|enforced|appl(?:y|ies)|"
                      r"have to|has to|must|a rule|the rule)|(?:don't|do not|no need to|needn't)\b[^.;]{0,40}\bany ?more|"
                      r"(?:(?:we|you|i|they|the team)\s+(?:have\s+|had\s+)?stopped|^\W*stop)\s+"
                      r"(?:doing|using|requiring|running|enforcing)|drop(?:ped)? the (?:rule|requirement|"
                      r"policy|convention|restriction)|lift(?:ed)? the|scrap(?:ped)?|revert(?:ed)? the (?:rule|decision|"
                      r"policy)|abandon(?:ed)?|retire(?:d)? the|(?:is|are) (?:allowed|fine|ok) again|"
                      r"ignore the (?:old )?rule|forget (?:about )?the rule)\b", re.IGNORECASE)
_RULE = re.compile(r"(?<![\w-])(?:rule|from now on|house style|convention|policy|never|always|must(?:n't| not)?|"
                   r"not allowed|only ever|do not ever|don't ever|mandatory|forbidden|required to|have to|has to)\b",
                   re.IGNORECASE)
_DECIDED = re.compile(r"\b(?:we(?:'ll| will|'re| are)? (?:go|went|keep|kept|use|stick|stay|run|make|want|chose|picked)|"
                      r"let's (?:go|use|keep|stick)|decid(?:e|ed|ing)|decision|chose|choose|opted|agreed|prefer|"
                      r"stick with|go with|"
                      r"instead of|rather than|switch(?:ed)? to|settled on)\b", re.IGNORECASE)
_REASON = re.compile(r"\b(?:because|since|so that|so (?:a|an|the|it|we|they|that|each|every|no)\b|as it|which means|"
                     r"otherwise|the reason|due to|to avoid|to keep|matters?|for (?:safety|speed|size)|given that|"
                     r"or else|that way)\b", re.IGNORECASE)
# A how-to: a command in backticks, said as the way to do something.
_COMMAND_IN_TEXT = re.compile(r"`([^`\n]{3,160})`")
_HOW_TO = re.compile(r"\b(?:runs?|use|starts?|boots?|builds|deploys|invoke|execute|call|type|do|needs?|requires?|first|"
                     r"before|then|from now on|to (?:run|start|build|test|deploy|apply|reset|seed|generate|release|"
                     r"publish|install|update|boot))\b", re.IGNORECASE)
_SHELL_START = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S+\s+)*(?:\./|bin/|sudo\s+)?[a-z][\w.+-]*(?:\s|$)")
_CLAUSES = re.compile(r";\s+|\s+(?:but|whereas|while)\s+|,\s+(?:but|and then|so)\s+", re.IGNORECASE)
# Words after a number that are no unit of it ("48 now", "6 with a delay", "100 if …").
_NOT_UNITS = frozenset("""
now then so if per after before instead again too also only just currently still here there yet ago each every with
without in at on of to for from by as and or but than when while until unless since into onto over under via max min
""".split())
# Words that say nothing of what a value is about.
_NOT_SUBJECT = frozenset("""
now also just still currently please done ok okay we i you it its they them this that these those there here then
so set make made move moved bump bumped raise raised lower lowered increase increased decrease decreased reduce reduced
change changed push pushed shift shifted postpone postponed switch switched update updated upgrade upgraded pin pinned
cut drop dropped from to instead rather
value values new old default get gets got use uses used run runs ran take takes took is are was were be been stays
remains equals keep keeps kept per about around every each went go goes gone let lets want like also too well
understood sure noted got thanks thank yes yep right agreed perfect great fine cool listens listen serves lives sits
points runs
""".split())


@dataclass
class Said:
    """One thing a clause states (core/records.KnowledgeDraft is made of it, core/knowledge/extract.py)."""

    kind: str  # fact, procedure, decision
    modality: str
    text: str  # the sentence, as shown
    name: str = ""  # a setting's name as written (a fact about a named setting)
    value: str = ""
    about: list[str] = field(default_factory=list)  # what it is about, in words (a fact without a name, a rule)
    old: str = ""  # the value it replaced, when the clause says it ("from 8123 to 9090", "(was 3)")
    command: str = ""  # a procedure's command


def statements(text: str, *, user: bool = False) -> list[Said]:
    """What a text states, sentence by sentence (`user`: the user's own words, whose requests set values). A
    sentence that held a secret or a private span (redacted, shared/redact.py) states nothing."""
    found: list[Said] = []
    before: list[str] = []  # what the sentence before was about: "it" in "lower it to 45"
    for sentence in sentences.split(text, at_semicolons=True):
        sentence = " ".join(sentence.split())
        if len(sentence) < 8 or len(sentence) > MAX_CLAUSE_CHARS or "[REDACTED" in sentence or "[private]" in sentence:
            continue
        found += _of_sentence(sentence, user, before)
        before = _content(sentence)
        if len(found) >= MAX_ITEMS:
            break
    return found[:MAX_ITEMS]


def _content(text: str) -> list[str]:
    """What a sentence or clause is about, for "it" in the next: its last content words."""
    return [w for w in words(text) if w not in STOPWORDS and w not in _NOT_SUBJECT and len(w) > 2
            and not any(ch.isdigit() for ch in w)][-4:]


def value_of(raw: str) -> str:
    """A value as kept: without a word after it that is no unit ("48 now" → "48")."""
    raw = raw.strip("` ")
    parts = raw.rsplit(" ", 1)
    if len(parts) == 2 and parts[1].lower() in _NOT_UNITS | STOPWORDS:
        return parts[0].rstrip(" .,;:")
    return raw.rstrip(" .,;:")


def _of_sentence(sentence: str, user: bool, before: list[str]) -> list[Said]:
    shown = sentence[:320]
    asked = sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(sentence) and not user) or bool(
        user and _USERS_QUESTION.search(sentence))
    how_to = _how_to(sentence, shown, asked)
    if how_to is not None:
        return [how_to]
    found: list[Said] = []
    subject_before: list[str] = before
    for clause in _CLAUSES.split(sentence):
        facts = _facts(clause, shown, asked or clause.rstrip().endswith("?"), user, subject_before)
        found += facts
        if facts and facts[-1].about:
            subject_before = facts[-1].about
        elif not facts:  # "the nightly backup collides with the ETL, push it to 01:30": "it" is this clause's
            subject_before = _content(clause) or subject_before
    if found:
        return found
    decision = _decision(sentence, shown, asked)
    return [decision] if decision is not None else []


_CONDITION_AFTER = re.compile(r"^\W{0,3}\S{0,30}?\s*\b(?:if|unless|in case|once|when|until)\b", re.IGNORECASE)


def _modality(clause: str, before_value: str, asked: bool, fact: bool) -> str:
    """How a clause gives its value: a hedge before it ("we could bump it to 100"), or a condition right after it ("…
    to 100 if customers complain") make it a proposal; a hedge further on belongs to another clause ("…, which would
    …")."""
    if asked:
        return "asked"
    if fact and _NEGATION.search(before_value):
        return "negated"
    after = clause[len(before_value):]
    if _HEDGE.search(before_value) or _CONDITION_AFTER.search(after[:60]):
        return "proposed"
    return "stated"


# --- values ---------------------------------------------------------------------------------------------------------

def _facts(clause: str, shown: str, asked: bool, user: bool, subject_before: list[str]) -> list[Said]:
    found: list[Said] = []
    taken: list[tuple[int, int]] = []
    for match in [*_SETTING.finditer(clause), *_PLAIN_WORD_VALUE.finditer(clause)]:
        name = match.group("quoted") or match.group("ident")
        if not _is_setting_name(name, bool(match.group("quoted")), match.groupdict().get("op")) or is_secret_name(name):
            continue
        if any(start <= match.start() < end for start, end in taken):
            continue
        joined = match.groupdict().get("op") or match.groupdict().get("word_op") or match.groupdict().get("from")
        if not joined and not match.group("value")[:1].isdigit():
            continue  # "port 9090" names a value; "the BullMQ `delay`" does not
        taken.append(match.span())
        value = value_of(match.group("value"))
        old = value_of((match.groupdict().get("old") or "") or _old_in(clause[match.end():]))
        found.append(Said("fact", _modality(clause, clause[:match.start("value")], asked, True), shown,
                          name=name.lstrip("@$").strip("`"), value=value, old=old))
    if found:
        return found
    said = _in_words(clause, shown, asked, user, subject_before)
    return [said] if said is not None else []


_FILE_PATH = re.compile(r"(?:[\w.\-]+/)+[\w\-]+\.[A-Za-z]{1,8}")


def _is_setting_name(name: str, quoted: bool, op: str | None) -> bool:
    """Does a word name a setting (rather than being a word of the sentence)?"""
    if quoted or name.startswith("-"):
        return True
    if len(name) < 3 or name.lower() in STOPWORDS:
        return False
    bare = name.lstrip("@$")
    if _FILE_PATH.fullmatch(bare):  # "Updated approvals in config/app.php: …" names a file, not a setting
        return False
    return bool(re.search(r"[_.:/]|->", bare[1:]) or re.search(r"[a-z][A-Z]", bare) or
                (bare.isupper() and len(bare) >= 3 and op is not None) or name.startswith("@"))


def _old_in(rest: str) -> str:
    was = _WAS.search(rest[:80])
    return was.group("old") if was else ""


def _in_words(clause: str, shown: str, asked: bool, user: bool, subject_before: list[str]) -> Said | None:
    """A value said in words: changed ("bumped the timeout to 30 s"), now ("media jobs now get 540 seconds"), or what
    something is ("the timeout is 30 s")."""
    change = _CHANGE.search(clause)
    now = _NOW.search(clause)
    past = ""  # a value said to be the old one ("the retention was 7 days, now it's 30 days")
    for match in islice(_VALUE.finditer(clause), VALUES_PER_CLAUSE):
        before = clause[:match.start()]
        near = before[-NEAR_VALUE_CHARS:]  # the patterns below end at the value: each value costs the same
        if _PAST.search(near):
            past = past or value_of(match.group(0))
            continue
        by_change = bool(change and change.end() <= match.start() and _TO.search(before[change.end():][-NEAR_VALUE_CHARS:]))
        if not (by_change or _COPULA.search(near) or (now and not _FROM.search(near))):
            continue
        if _FROM.search(near) and not by_change:
            continue
        value = value_of(match.group(0))
        pronoun = _PRONOUN_SUBJECT.search(before[-40:])
        if pronoun:  # "lower it to 4": what "it" is, the sentence before or the words before it
            start = len(before) - len(before[-40:]) + pronoun.start()
            about = subject_before or _subject(clause[:start], (start, start))
        else:
            about = _subject(clause, match.span()) or (subject_before if by_change else [])
        if not about or any(is_secret_name(word) for word in about):
            continue  # "the salt for jwt signing is now …": a secret's value is never a fact, redacted or not
        old = ""
        if by_change:
            start = change.end() if change else 0
            frm = re.search(rf"\bfrom\s+(?:(?:the|a|an)\s+)?(?:[A-Za-z][\w\-]{{0,20}}\s+){{0,2}}(?P<old>{VALUE})",
                            clause[start:match.start()])
            old = frm.group("old") if frm else ""
        old = value_of(old or _old_in(clause[match.end():]) or past)
        modality = _modality(clause, before, asked, True)
        if user and modality == "proposed" and not _HEDGE.search(clause.replace("let's", "")):
            modality = "stated"
        return Said("fact", modality, shown, value=value, about=about, old=old)
    return None


def _subject(clause: str, value_span: tuple[int, int]) -> list[str]:
    """The words of a clause that say what its value is about: its content words, the nearest to the value first
    (the noun right before or after the value, "port 9090", "540 seconds", among them)."""
    start, end = value_span
    left = [w for w in words(clause[:start])][-8:]
    right = [w for w in words(clause[end:])][:2]
    near = list(reversed(left)) + right
    about = [w for w in near if w not in STOPWORDS and w not in _NOT_SUBJECT and len(w) > 2
             and not any(ch.isdigit() for ch in w)]
    return list(dict.fromkeys(about))[:6]


# --- decisions and how-tos -----------------------------------------------------------------------------------------

def _decision(sentence: str, shown: str, asked: bool) -> Said | None:
    content = [w for w in words(sentence) if w not in STOPWORDS and len(w) > 2]
    if len(content) < MIN_RULE_WORDS:
        return None
    if not (is_rule(sentence) or _REVOKED.search(sentence) or
            (_DECIDED.search(sentence) and _REASON.search(sentence))):
        return None
    return Said("decision", "asked" if asked else rule_modality(sentence), shown, about=rule_words(sentence))


# What happened or may have, told with a rule's words: "0.6.0 never confirmed itself", "the check never fired",
# "never mind", "they must have changed the format", "it has to be the cache".
REPORTED = re.compile(r"\b(?:never|always)\s+(?:\w+ly\s+)?\w{3,}ed\b|\bnever\s+mind\b|\bmust(?:'ve|\s+have)\s+\w+|"
                      r"\b(?:has|have)\s+to\s+be\b", re.IGNORECASE)


def is_rule(sentence: str) -> bool:
    """Does a sentence say a rule ("never retry a 4xx", "always squash merges"), not report what happened with a
    rule's words ("the job always failed at 3 am")?"""
    return bool(_RULE.search(sentence)) and not REPORTED.search(sentence)


# A sentence that proposes rather than settles: it opens with a hedge or a condition, or its subject only could.
_PROPOSAL = re.compile(r"^\W*(?:(?:so|then|ok|okay|well|also|and|but)\W+)?(?:(?:i think|maybe|perhaps|possibly|"
                       r"alternatively|optionally|how about|what about|one option|another option|consider|if we|if you|"
                       r"suppose|in theory)\b|(?:we|you|i|they|one)\s+(?:could|might|may|would|can try|could try)\b)",
                       re.IGNORECASE)


def rule_modality(sentence: str) -> str:
    """How a sentence says a rule or a decision: stated, asked, proposed ("you could use Redis instead because …"),
    negated ("we didn't decide …") or revoked ("we no longer squash merges"). An explanation's "would" ("so a
    redelivery would go through anyway") proposes nothing."""
    if sentence.rstrip().endswith("?"):
        return "asked"
    if _REVOKED.search(sentence):
        return "revoked"
    if _NOT_DECIDED.search(sentence):
        return "negated"
    if _PROPOSAL.search(sentence):
        return "proposed"
    return "stated"


def rule_words(text: str) -> list[str]:
    """What a rule or a decision is about, as light-stemmed content words (a revocation names the same)."""
    markers = {normalize_term(w) for w in words(_RULE.pattern + " no longer anymore drop lift scrap rule decided")}
    return sorted({normalize_term(w) for w in words(text) if w not in STOPWORDS and len(w) > 2
                   and w not in _NOT_SUBJECT and normalize_term(w) not in markers})[:12]


def _how_to(sentence: str, shown: str, asked: bool) -> Said | None:
    from .commands import is_looking

    commands = [c for c in _COMMAND_IN_TEXT.findall(sentence) if _SHELL_START.match(c) and " " in c.strip()
                and not is_looking(c)]
    if not commands or not _HOW_TO.search(sentence):
        return None
    modality = "asked" if asked else "negated" if re.search(r"\b(?:don't|do not|never|avoid)\b", sentence, re.I) \
        else "proposed" if re.search(r"\b(?:could|might|maybe|perhaps|try)\b", sentence, re.I) else "stated"
    return Said("procedure", modality, shown, command=commands[0])
