"""docs/benchmarks.md is written by the benchmarks, never by hand: `recall bench latency --record` (and size,
soak, locomo) put their own report under the package version's heading, replacing that version's earlier
report of the same benchmark. A release's figures are therefore the last run before it was tagged."""

from __future__ import annotations

import re
import time
from pathlib import Path

from ...version import __version__

PAGE = Path(__file__).resolve().parents[3] / "docs" / "benchmarks.md"
MARK = "<!-- recorded: {version} {bench} -->"


def recordable(page: Path = PAGE) -> str | None:
    """Why a report cannot be recorded here (None: it can): the page belongs to a checkout of recall."""
    if not (page.parent.parent / "pyproject.toml").is_file():
        return f"--record writes {page.relative_to(page.parents[1])} of a recall checkout; this recall is installed " \
               f"as a package ({page.parents[1]})"
    return None


def record(bench: str, report: str, page: Path = PAGE, version: str = __version__, when: float | None = None) -> Path:
    """Put `report` (the benchmark's printed output) in `page` under `## version` / `### bench`."""
    text = page.read_text(encoding="utf-8") if page.exists() else "# Benchmarks\n"
    stamp = time.strftime("%Y-%m-%d", time.localtime(when))
    mark = MARK.format(version=version, bench=bench)
    block = f"### {bench}\n\n{mark}\n`recall bench {bench}` on {stamp}:\n\n```\n{report.rstrip()}\n```\n{mark}\n"
    existing = re.compile(rf"### {re.escape(bench)}\n\n{re.escape(mark)}\n.*?{re.escape(mark)}\n", re.DOTALL)
    if existing.search(text):
        text = existing.sub(lambda _: block, text)
    else:
        heading = f"## {version}\n"
        if heading not in text:  # the newest version first, after the page's introduction
            first = re.search(r"^## ", text, re.MULTILINE)
            at = first.start() if first else len(text)
            text = text[:at].rstrip() + f"\n\n{heading}\n" + ("\n" + text[at:] if first else "")
        start = text.index(heading) + len(heading)
        following = re.search(r"^## ", text[start:], re.MULTILINE)
        end = start + following.start() if following else len(text)
        text = text[:end].rstrip() + "\n\n" + block + ("\n" + text[end:] if following else "")
    page.write_text(text.rstrip() + "\n", encoding="utf-8")
    return page
