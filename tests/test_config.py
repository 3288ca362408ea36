"""config.json read as a user writes it: a typo is named with the setting it most likely meant, a file that is not
JSON says so (and `recall doctor` asks for its syntax to be fixed, not for a setting to be removed)."""

from __future__ import annotations

import json

from memory_store import open_recall
from memory_store.core.config import config_problems, load_config
from memory_store.shared.paths import DataPaths


def test_a_misspelt_setting_is_named_with_the_one_it_meant(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"tiers": {"warm_topk": 3, "hot_size": 4}, "injct": {}, "gate": {"zzz": 1}}))
    config = load_config(path)
    said = {p.key: p.reason for p in config_problems(config)}
    assert said == {"tiers.warm_topk": "unknown setting (did you mean tiers.warm_top_k?)",
                    "injct": "unknown setting (did you mean inject?)", "gate.zzz": "unknown setting"}
    assert config.tiers.hot_size == 4  # the rest of the file still applies


def test_a_file_that_is_not_json_asks_for_its_syntax_to_be_fixed(home):
    DataPaths(home).home.mkdir(parents=True, exist_ok=True)
    DataPaths(home).config.write_text('{"tiers": {"warm_top_k": 3,}}')
    with open_recall(home, load_models=False) as recall:
        checks = [c for c in recall.diagnose() if c.name == "config"]
    assert len(checks) == 1 and not checks[0].ok
    assert "not JSON" in checks[0].detail and "JSON syntax" in checks[0].hint


def test_recall_config_shows_what_is_in_effect_and_where_it_came_from(home, monkeypatch):
    from typer.testing import CliRunner

    from memory_store.shells.cli import app

    DataPaths(home).home.mkdir(parents=True, exist_ok=True)
    DataPaths(home).config.write_text(json.dumps({"tiers": {"warm_top_k": 3, "warm_topk": 2, "hot_size": -1}}))
    monkeypatch.setenv("RECALL_DATABASE_URL", "postgresql://alice:s3cret@db.internal/recall")
    result = CliRunner().invoke(app, ["config", "--home", str(home)])
    assert result.exit_code == 1  # something in config.json was not used
    assert "tiers.warm_top_k = 3  (config.json; default 2)" in result.stdout
    assert 'storage.url = "postgresql://alice:***@db.internal/recall"  (RECALL_DATABASE_URL' in result.stdout
    assert "did you mean tiers.warm_top_k?" in result.stdout and "s3cret" not in result.stdout
    assert "inject.budget_chars" not in result.stdout  # defaults only with --all
    every = json.loads(CliRunner().invoke(app, ["config", "--all", "--json", "--home", str(home)]).stdout)
    assert {s["key"] for s in every["settings"]} >= {"inject.budget_chars", "tiers.warm_top_k", "storage.url"}
    hot_size = next(s for s in every["settings"] if s["key"] == "tiers.hot_size")
    assert hot_size == {"key": "tiers.hot_size", "value": 5, "default": 5, "source": "default"}  # -1 was not used
