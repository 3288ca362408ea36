"""Dates and relative times in a query, turned into a time window.

"in July 2022", "16 November 2023", "Nov 3rd", "2024-05-03", "between August 11 and
August 15 2023", "last Friday", "yesterday", "last week" … A memory is created when something
is said, and people report events after they happen ("I went to Woodhaven last week"), so the
window reaches a little before the named time and a few weeks after it
(`ranking.date_window_before_days` / `date_window_after_days` in the config).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

DAY = 86400.0
MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
# Tried in this order; a later pattern never re-reads text an earlier one matched.
_FORMS = [re.compile(rf"\b{form}\b", re.IGNORECASE) for form in (
    rf"{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?",  # 16 November 2023
    rf"{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?",  # November 16, 2023
    rf"{_MONTH},?\s+{_YEAR}",  # November 2023
    _MONTH,  # November
)]


_ISO = re.compile(r"\b((?:19|20)\d\d)-([01]\d)-([0-3]\d)\b")
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
# "last Friday", "on Monday": the latest such day (today counts for "on", not for "last"); a bare weekday is too
# often a plan ("the Monday deploy") to be read as a date.
_WEEKDAY = re.compile(rf"\b(last|on|this past|past)\s+({'|'.join(WEEKDAYS)})\b", re.IGNORECASE)
_YEAR_ALONE = re.compile(r"\b(?:in|of|during|since)\s+((?:19|20)\d\d)\b", re.IGNORECASE)

# Relative phrases: (pattern, days back to the window start, days back to its end).
_RELATIVE = [
    (re.compile(r"\b(today|this morning|this afternoon|earlier today|just now|an hour ago|minutes ago)\b", re.I),
     1.0, 0.0),
    (re.compile(r"\b(yesterday|last night)\b", re.I), 2.0, 0.5),
    (re.compile(r"\b(the other day|a few days ago|couple of days ago|days ago|this week|recently|lately)\b", re.I),
     7.0, 0.0),
    (re.compile(r"\b(last week|a week ago|previous week)\b", re.I), 14.0, 5.0),
    (re.compile(r"\b(this month|a few weeks ago|weeks ago|couple of weeks)\b", re.I), 35.0, 0.0),
    (re.compile(r"\b(last month|a month ago|previous month)\b", re.I), 62.0, 25.0),
]


@dataclass
class TimeWindow:
    start: float
    end: float
    exact_day: bool  # a day was named (not just a month or year)
    span: tuple[int, int]  # where in the text it was found


def _to_ts(value: datetime) -> float:
    return value.replace(tzinfo=timezone.utc).timestamp()


def _range(year: int, month: int, day: int | None) -> tuple[datetime, datetime, bool] | None:
    if day is not None:
        if not 1 <= day <= calendar.monthrange(year, month)[1]:
            return None
        start = datetime(year, month, day)
        return start, start + timedelta(days=1), True
    return datetime(year, month, 1), datetime(year + (month == 12), month % 12 + 1, 1), False


def _named_dates(text: str, now: datetime) -> tuple[list[tuple[datetime, datetime, bool]], tuple[int, int]]:
    """The dates named in `text` as (start, end, a day was named), and the span of text they cover."""
    parts: list[tuple[int, int, int | None, int | None]] = []  # (position, month, day, year or None)
    spans: list[tuple[int, int]] = []
    for match in _ISO.finditer(text):
        parts.append((match.start(), int(match.group(2)), int(match.group(3)), int(match.group(1))))
        spans.append(match.span())
    for form in _FORMS:
        for match in form.finditer(text):
            if any(match.start() < end and start < match.end() for start, end in spans):
                continue
            groups = match.groupdict()
            if (groups["month"].lower() in ("may", "march", "mar", "jan", "sat", "sun")
                    and not (groups.get("day") or groups.get("year"))):
                continue  # "may" and "march" alone are usually words, not months
            month = MONTHS[groups["month"].lower().rstrip(".")]
            day = int(groups["day"]) if groups.get("day") else None
            year = int(groups["year"]) if groups.get("year") else None
            parts.append((match.start(), month, day, year))
            spans.append(match.span())
    parts.sort()
    found = []
    for index, (_, month, day, year) in enumerate(parts):
        if year is None:  # "between August 11 and August 15 2023": borrow the next stated year
            year = next((p[3] for p in parts[index + 1:] if p[3] is not None), None)
        if year is None:  # else the latest such date that is not in the future
            year = now.year if (month, day or 1) <= (now.month, now.day) else now.year - 1
        resolved = _range(year, month, day)
        if resolved:
            found.append(resolved)
    span = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else (0, 0)
    return found, span


def find_window(text: str, now: float, before_days: float = 2, after_days: float = 21) -> TimeWindow | None:
    """The time a query points at, if any: named dates first, then relative phrases."""
    now_dt = datetime.fromtimestamp(now, tz=timezone.utc).replace(tzinfo=None)
    found, span = _named_dates(text, now_dt)
    if not found:
        for year_match in _YEAR_ALONE.finditer(text):
            year = int(year_match.group(1))
            found.append((datetime(year, 1, 1), datetime(year + 1, 1, 1), False))
            span = year_match.span(1)
    if found:
        start = min(f[0] for f in found)
        end = max(f[1] for f in found)
        return TimeWindow(_to_ts(start) - before_days * DAY, _to_ts(end) + after_days * DAY,
                          any(f[2] for f in found), span)
    weekday = _WEEKDAY.search(text)
    if weekday:  # that day, with half a day either side for time zones and work reported the next morning
        back = (now_dt.weekday() - WEEKDAYS[weekday.group(2).lower()]) % 7
        if back == 0 and weekday.group(1).lower() != "on":
            back = 7
        day = _to_ts(datetime(now_dt.year, now_dt.month, now_dt.day) - timedelta(days=back))
        return TimeWindow(day - 0.5 * DAY, min(day + 1.5 * DAY, now), True, weekday.span())
    for pattern, back_start, back_end in _RELATIVE:
        match = pattern.search(text)
        if match:
            return TimeWindow(now - back_start * DAY, now - back_end * DAY, False, match.span())
    return None
