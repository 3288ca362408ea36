"""Boundaries that keep hooks fast and layers clean, checked on the code itself."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

from conftest import ROOT, load_payload

PACKAGE = ROOT / "memory_store"
# Modules the hook process may load: standard library only (they run under `python -I -S`).
HOOK_SIDE = {"__init__", "hook_client", "transport", "paths", "fallback", "spool", "payload", "redact", "logs",
             "locks", "bootstrap", "launch"}
HEAVY = {"pydantic", "typer", "numpy", "apsw", "fastembed", "sqlite_vec", "rank_bm25", "onnxruntime", "click", "rich"}


def imports_of(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: memory_store.<module>
                found.add("." + (node.module or "").split(".")[0])
            elif node.module:
                found.add(node.module.split(".")[0] if not node.module.startswith("memory_store") else
                          "." + (node.module.split(".")[1] if "." in node.module else "__init__"))
    return found


def test_hook_side_modules_use_the_standard_library_only():
    for name in HOOK_SIDE - {"__init__"}:  # __init__ only imports lazily, inside __getattr__
        imported = imports_of(PACKAGE / f"{name}.py")
        assert not imported & HEAVY, f"{name} imports {imported & HEAVY}"
        internal = {m[1:] for m in imported if m.startswith(".")} - {""}
        assert internal <= HOOK_SIDE, f"{name} imports non-hook-side modules {internal - HOOK_SIDE}"
        third_party = {m for m in imported if not m.startswith(".") and m not in sys.stdlib_module_names}
        assert third_party <= {"memory_store"}, f"{name} imports {third_party}"


def test_lower_layers_never_import_the_cli():
    for path in PACKAGE.rglob("*.py"):
        if path.stem in ("cli", "demo") or "bench" in path.parts:
            continue
        assert ".cli" not in imports_of(path), f"{path.name} imports the CLI"


def test_hook_fast_path_imports_almost_nothing(hooks, home, project):
    """With a worker up, a hook loads no JSON parser, no pathlib, nothing heavy: measured with -X importtime."""
    payload = load_payload("PostToolUse-Bash", cwd=str(project))
    hooks.run("SessionStart", load_payload("SessionStart-startup", cwd=str(project)))  # starts the worker
    env = dict(os.environ, CLAUDE_PLUGIN_ROOT=str(ROOT))
    result = subprocess.run([sys.executable, "-X", "importtime", "-I", "-S", str(ROOT / "hooks" / "hook.py"),
                             "PostToolUse"], input=json_bytes(payload), capture_output=True, env=env, timeout=30)
    assert result.returncode == 0 and result.stdout == b""
    modules = {line.split("|")[-1].strip() for line in result.stderr.decode().splitlines() if "|" in line}
    assert "memory_store.hook_client" in modules
    assert not modules & (HEAVY | {"json", "pathlib", "re", "socket", "subprocess", "memory_store.fallback"}), modules


def json_bytes(payload) -> bytes:
    import json

    return json.dumps(payload).encode()
