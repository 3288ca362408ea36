"""The docs say what the code does: the configuration page is generated from the Config model and every
setting is named on it, every relative link and every backticked repository path points at something that
exists, the README stays a user's page, and the CHANGELOG names the version the package carries."""

from __future__ import annotations

import re

from conftest import ROOT

from memory_store.core.config import Config
from memory_store.devtools import config_reference
from memory_store.version import __version__

DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *DOCS]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
BACKTICKED = re.compile(r"`([^`\s]+)`")
# A backticked word is taken for a repository path when it names a file by one of these endings, or a folder.
PATH_LIKE = re.compile(r"^(?:\.?[\w.-]+/)+[\w.-]*$|^[\w./-]+\.(?:py|md|json|toml|sh|jsonl|txt)$")
REPOSITORY_TOPS = {p.name for p in ROOT.iterdir()}
PACKAGE_TOPS = {p.name for p in (ROOT / "memory_store").iterdir()}  # `core/router.py` is memory_store/core/router.py
COMMIT_HASH = re.compile(r"\b[0-9a-f]{7,40}\b")


def test_the_configuration_page_is_the_generated_one():
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == config_reference.render(), "run python -m memory_store.devtools.config_reference"


def test_every_setting_is_named_and_described():
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for section, field in Config.model_fields.items():
        model = field.annotation
        for name, setting in model.model_fields.items():
            assert f"`{section}.{name}`" in page
            assert setting.description, f"{section}.{name} has no description (Field(description=...))"


def test_relative_links_point_at_files_that_exist():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def repository_path(word: str) -> bool:
    """A backticked word that names a file or folder of this repository (not a command, a URL or a data dir)."""
    if not PATH_LIKE.match(word) or word.startswith(("~", "/", "$", "http")) or "*" in word:
        return False
    return word.split("/")[0] in REPOSITORY_TOPS | PACKAGE_TOPS


def exists(word: str) -> bool:
    return (ROOT / word).exists() or (ROOT / "memory_store" / word).exists()


def test_backticked_repository_paths_exist():
    missing = []
    for page in PAGES:
        for word in BACKTICKED.findall(page.read_text(encoding="utf-8")):
            if repository_path(word) and not exists(word):
                missing.append(f"{page.relative_to(ROOT)}: {word}")
    assert not missing, missing


def test_the_path_check_sees_paths():
    assert repository_path("memory_store/core/router.py") and repository_path("docs/configuration.md")
    assert repository_path("core/storage/contract.py") and not exists("core/store.py")
    assert not repository_path("recall search") and not repository_path("~/.claude/plugins")


def test_the_readme_is_a_users_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    head = "\n".join(text.splitlines()[:40])
    assert "pip install" in head and "pytest" in head, "install and test commands belong at the top"
    assert not COMMIT_HASH.findall(text), "no commit hashes as provenance in the README"


def test_the_changelog_names_the_current_version():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{__version__}]" in changelog


def test_a_recorded_benchmark_replaces_its_earlier_report_under_the_version(tmp_path):
    from memory_store.devtools.bench.record import record

    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\nintro\n\n## 0.1.0\n\nold figures\n")
    record("latency", "UserPromptSubmit p50 2.50x", page, version="0.2.0")
    record("soak", "growth 1.8 MB", page, version="0.2.0")
    record("latency", "UserPromptSubmit p50 2.40x", page, version="0.2.0")
    text = page.read_text()
    assert text.index("## 0.2.0") < text.index("## 0.1.0") and "old figures" in text and "intro" in text
    assert "2.40x" in text and "2.50x" not in text and "growth 1.8 MB" in text
    assert text.count("### latency") == 1 and text.count("## 0.2.0") == 1
