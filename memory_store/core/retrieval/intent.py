"""What a prompt asks of memory, read from its form alone (no search, no model): the first signal
of the injection gate (see gate.py).

    chat         greetings, thanks, acknowledgements ("morning!", "ok cool"): never searched
    instruction  an order with no question and no reference to the past ("add docstrings to
                 x.py"): never searched; the work itself is not about memory
    recall       an explicit reference to earlier work ("remind me…", "what did we decide…",
                 "last time…"): searched beyond the warm window, lowest evidence bar
    project      a question about this project's state, decisions or conventions ("why did…",
                 "…do we use", "…now", "is it ok to…", "where does X live")
    general      a question in the form of general knowledge ("what's the difference between",
                 "how does X work", "what does X do"): the highest evidence bar
    statement    anything else (a report, a remark): a high evidence bar

Each class comes with the reasons that put it there, for `recall explain`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..timeparse import WEEKDAYS

_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")

# Words that carry no request: greetings, thanks, acknowledgements, fillers.
SOCIAL = frozenset("""
hi hello hey heya yo morning evening afternoon night good gm thanks thank thx ty cheers great nice cool ok okay
k kk yes yep yeah yup sure sounds fine perfect awesome excellent lovely alright right got it that's thats it for
now bye later see you around there all done work job well much appreciated np no problem lgtm ack noted indeed
please again wow oh ah hmm you're youre welcome will do on what up how's hows going today there's nothing else
""".split())

EXPLICIT_RECALL = re.compile(
    r"\b(remind me|do you remember|you remember|remember (?:when|what|why|how|which|where|who|the)|recall (?:when|what|"
    r"why|how|which|the)|what did (?:we|i|you)\b|why did (?:we|i|you)\b|how did (?:we|i|you)\b|which .{0,30}?did "
    r"(?:we|i|you)\b|did (?:we|i|you) (?:decide|agree|settle|choose|pick|say|conclude|find|figure)|"
    r"(?:we|you|i) (?:decided|agreed|settled on|chose|discussed|said|talked about|figured out)|last time|the other day|"
    r"earlier (?:today|this week|we|you|i)|previously|a while (?:ago|back)|(?:last|this past|previous) "
    r"(?:week|month|session|sprint|time|year|" + "|".join(WEEKDAYS) + r")|"
    r"(?:yesterday|days? ago|weeks? ago|months? ago)|"
    r"as (?:we|you|i) (?:did|said|decided|discussed)|what was (?:the|that|our)|what were (?:the|our|those))",
    re.IGNORECASE,
)
# The project and its history: we/our, the current state, conventions, permission, what something is here.
PROJECT_MARKERS = re.compile(
    r"\b(we|our|ours|us|we're|we've|we'd|this (?:project|repo|repository|codebase|app|service|team)|in here|"
    r"now|currently|current|these days|at the moment|right now|anymore|still|so far|by default|nowadays|"
    r"house rule|convention|conventions|policy|our rule|the rule|allowed|supposed to|correct way|right way|proper way|"
    r"should i|should we|can i|may i|is it ok|is it okay|is it fine|fine for|ok to|okay to|"
    r"which (?:file|module|directory|folder|class|function|script|command|service|table|config|setting|flag|branch)|"
    r"where (?:do|does|is|are|'s|did)|where's)\b",
    re.IGNORECASE,
)
ADVICE = re.compile(r"should i|can i|may i", re.IGNORECASE)  # PROJECT_MARKERS that ask for advice ("we" is ours)
PAST_TENSE = re.compile(
    r"\b(did|was|were|had|went|got|came|made|broke|happened|caused|failed|crashed|errored|changed|decided|"
    r"chose|picked|switched|moved|added|removed|fixed|used|hung|froze)\b",
    re.IGNORECASE,
)
# General-knowledge forms: about a tool or concept in general, not about this project.
GENERAL_FORMS = re.compile(
    r"(what(?:'s| is| are) the difference|difference between|how (?:does|do) (?!the\b)(?:\S+\s+){1,6}?work\b|"
    r"what (?:does|do) (?!the\b)(?:\S+\s+){1,8}?(?:actually |really )?do\b|how is .{1,60}? different|"
    r"\bdiffers? from\b|\buseful for\b|"
    # a technology named as the question's setting: "in Svelte, …", "in Spring Boot 3, …"
    r"^\s*in [^,?\n]{1,40},\s|"
    # when to choose one thing over another: "when should I reach for a CTE rather than a subquery"
    r"\bwhen (?:is|are|should|would|do|does)\b[^?\n]{0,80}?\b(?:instead of|rather than|over|worth|good enough)\b|"
    r"(?:compared|versus|vs\.?) |when (?:would|should|do) (?:i|you|one) (?:pick|use|choose|prefer)|"
    r"what happens (?:to|when|if)|^\s*(?:does|do|is|are|can|will|would) (?:a|an|\w+ing) |\bin general\b|"
    r"best practices? for|"
    r"^\s*(?:explain|describe) (?:how|what|the difference))",
    re.IGNORECASE,
)
QUESTION_START = re.compile(
    r"^\s*(?:who|what|when|where|why|how|which|whose|whom|is|are|was|were|do|does|did|can|could|should|would|will|"
    r"have|has|had|may|might|shall|isn't|aren't|don't|doesn't|didn't|wasn't|weren't|won't|can't|what's|where's|"
    r"how's|who's|why's|"
    # … as typed in a hurry, without the apostrophe
    r"whats|wheres|hows|whos|whys|isnt|arent|dont|doesnt|didnt|wasnt|werent|wont|cant)\b",
    re.IGNORECASE,
)
# A request phrased as a question ("can you add …?", "could you please rename …?") is an order, unless
# what it asks for is itself a question about something ("could you check why …").
POLITE_REQUEST = re.compile(r"^\s*(?:please\s+)?(?:can|could|would|will) you (?:please |kindly )?(?!tell|remind|"
                            r"remember|recall|explain|check|look|find|see|figure|say)\w+", re.IGNORECASE)
_WH_WORD = re.compile(r"\b(?:why|what|how|where|which|when|who)\b", re.IGNORECASE)

# Words that start a sentence without being an order (pronouns, determiners, connectors …).
NON_IMPERATIVE_START = frozenset("""
i i'm i've i'd i'll we we're we've you you're he she it it's they there there's this that these those the a an my
our your their his her its some any no all every each one so and but or also then now still just maybe hmm well
when where why how what which who if since because while after before for in on at by with from to of as not
""".split())


# What kind of answer a question wants (matched against what a memory provides: sentences.provides).
ASKS = {
    "location": re.compile(r"\b(where|which (?:\w+ )?(?:file|module|directory|folder|class|function|script|package|"
                           r"path|dir)|what (?:\w+ )?(?:file|module|directory|folder|path)|in which)\b", re.IGNORECASE),
    "command": re.compile(r"\b(how (?:do|should|can) (?:i|we) (?:\w+ )?(?:run|launch|start|build|test|deploy|install|"
                          r"refresh|regenerate|update|set up|setup|queue|submit|reproduce|debug|release|publish|"
                          r"migrate|seed)|what (?:should|do) (?:i|we) (?:run|launch|start|type|use)|"
                          r"(?:right|correct|proper) way to|which command|what command)\b", re.IGNORECASE),
    "value": re.compile(r"\b(how (?:long|often|many|much|big|large|fast|far|high|low)|what (?:\w+ )?(?:rate|size|"
                        r"limit|value|threshold|timeout|version|port|dimensions?|interval|ttl|cap|number|amount|"
                        r"precision|setting)|which (?:\w+ )?(?:version|port|value|setting|precision|distance|size))\b",
                        re.IGNORECASE),
    "cause": re.compile(r"\b(why (?:did|does|do|was|were|is|are)\b(?! we\b)|what (?:caused|made|was behind|was wrong|"
                        r"went wrong|was producing|broke)|how did (?:we|it|that) (?:manage|end up|happen)|root cause)",
                        re.IGNORECASE),
    "reason": re.compile(r"\b(why (?:do|did|does|don't|didn't|isn't|aren't|is|are) we\b|why (?:isn't|aren't|not)|"
                         r"what speaks (?:for|against)|what convinced|why .{0,40}(?:instead of|rather than|over)|"
                         r"reason (?:for|behind|why))", re.IGNORECASE),
    "rule": re.compile(r"\b(can i|may i|should i|is it (?:ok|okay|fine|allowed)|is (?:a|an|the) .{1,40}? fine|"
                       r"allowed|house rule|convention|policy|are we supposed|am i supposed)\b", re.IGNORECASE),
}


def asks(prompt: str) -> set[str]:
    """The kinds of answer a prompt wants (see ASKS)."""
    return {kind for kind, pattern in ASKS.items() if pattern.search(prompt)}


# "Did we ever …?", "… at all?": whether something happened at all. Unless it did, only loosely related
# memories match, so these questions need stronger evidence (gate.GateConfig.existence_margin).
EXISTENCE = re.compile(r"\b(?:ever|at all|so far|before now|in the past)\b", re.IGNORECASE)
# A yes/no question ("do we have SSO?", "is there a mobile app?") is one too, unless it asks for a rule.
YES_NO = re.compile(r"^\s*(?:do|does|did|have|has|is|are|was|were|had)\s+(?:we|you|i|they|it|there|our|the|this|"
                    r"that|any)\b", re.IGNORECASE)


@dataclass
class Intent:
    kind: str  # chat, instruction, recall, project, general, statement
    reasons: list[str] = field(default_factory=list)
    wants: set[str] = field(default_factory=set)  # kinds of answer (asks())
    existence: bool = False  # asks whether something happened at all

    @property
    def searches(self) -> bool:
        return self.kind not in ("chat", "instruction")

    @property
    def explicit(self) -> bool:
        """The user asked about the past outright: older memories than the warm window may help."""
        return self.kind == "recall"


def _project_marker(text: str) -> re.Match[str] | None:
    """The first word that ties a question to this project. Asking for advice ("should I", "can I") inside a
    general form's own words ("in Go, when should I use a mutex instead of a channel?") is part of that form."""
    spans = [form.span() for form in GENERAL_FORMS.finditer(text)]
    for marker in PROJECT_MARKERS.finditer(text):
        inside = any(start <= marker.start() < end for start, end in spans)
        if not (inside and ADVICE.fullmatch(marker.group(0))):
            return marker
    return None


def _is_question(prompt: str) -> bool:
    return "?" in prompt or any(QUESTION_START.match(part) for part in re.split(r"[.!\n]\s*", prompt) if part)


def classify(prompt: str) -> Intent:
    """The intent of a prompt, with the reasons for it."""
    text = prompt.strip()
    words = [w.lower().strip("'’-") for w in _WORD.findall(text)]
    content = [w for w in words if w and w not in SOCIAL]
    explicit = EXPLICIT_RECALL.search(text)
    if explicit:
        return Intent("recall", [f"refers to earlier work ({explicit.group(0).lower()!r})"], asks(text))
    if len(content) <= 1 and len(words) <= 8:
        return Intent("chat", ["greeting or acknowledgement"])
    if POLITE_REQUEST.match(text) and not _WH_WORD.search(text):
        return Intent("instruction", ["a request to do something, phrased as a question"])
    question = _is_question(text)
    if not question:
        first = words[0] if words else ""
        if first and first not in NON_IMPERATIVE_START and not text[:1].isdigit():
            return Intent("instruction", [f"an order ({first!r} …) with no question"])
        return Intent("statement", ["not a question"])
    reasons = ["a question"]
    general = GENERAL_FORMS.search(text)
    project = _project_marker(text)
    past = PAST_TENSE.search(text)
    if general and not project:
        return Intent("general", reasons + [f"general-knowledge form ({general.group(0).strip().lower()!r})"],
                      asks(text))
    if project:
        reasons.append(f"about this project ({project.group(0).lower()!r})")
    if past:
        reasons.append(f"about the past ({past.group(0).lower()!r})")
    wants = asks(text)
    if wants:
        reasons.append("wants " + ", ".join(sorted(wants)))
    existence = bool(EXISTENCE.search(text)) or (bool(YES_NO.match(text)) and "rule" not in wants)
    if existence:
        reasons.append("asks whether something happened at all")
    return Intent("project", reasons, wants, existence)
