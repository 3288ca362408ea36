"""Boundaries that keep hooks fast and layers clean, checked on the code itself.

Imports are read with `ast` in every form: `import x`, `from x import y`, relative imports
(`from . import y`, `from ..shared import z`) and imports inside functions.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, load_payload

PACKAGE = ROOT / "memory_store"
HEAVY = {"pydantic", "typer", "numpy", "apsw", "fastembed", "sqlite_vec", "rank_bm25", "onnxruntime", "click",
         "rich", "mcp"}
# Each layer may import its own folder and the layers listed for it (never upwards).
LAYERS = {
    "memory_store.version": set(),
    "memory_store.shared": {"memory_store.version"},
    "memory_store.hook": {"memory_store.version", "memory_store.shared"},
    "memory_store.core": {"memory_store.version", "memory_store.shared"},
    # Other agents' configuration files (`recall install codex`): they know nothing of the store.
    "memory_store.integrations": {"memory_store.version", "memory_store.shared"},
    "memory_store.api": {"memory_store.version", "memory_store.shared", "memory_store.core",
                         "memory_store.integrations"},
    "memory_store.worker": {"memory_store.version", "memory_store.shared", "memory_store.core", "memory_store.api"},
    # Dev tools (demo, hook runner, benchmarks) drive the product from outside; `recall demo` and
    # `recall bench` reach them from the CLI.
    "memory_store.devtools": {"memory_store.version", "memory_store.shared", "memory_store.core",
                              "memory_store.api", "memory_store.hook"},
    "memory_store.shells": {"memory_store.version", "memory_store.shared", "memory_store.core", "memory_store.api",
                            "memory_store.hook", "memory_store.devtools", "memory_store.integrations"},
    # The package's public face: the version, and the API loaded lazily on first use.
    "memory_store": {"memory_store.version", "memory_store.api", "memory_store.core"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def imports_of(name: str) -> set[str]:
    """Absolute names of what module `name` imports, anywhere in its body."""
    path = MODULES[name]
    package = name if is_package(name) else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # `from pkg import module` imports that module
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in MODULES else target)
    return found


def internal_graph() -> dict[str, set[str]]:
    return {name: {m for m in imports_of(name) if m in MODULES and m != name} for name in MODULES}


def layer_of(name: str) -> str:
    for layer in sorted(LAYERS, key=len, reverse=True):
        if name == layer or name.startswith(layer + "."):
            return layer
    raise AssertionError(f"{name} is in no layer")


def test_every_module_belongs_to_a_layer():
    for name in MODULES:
        layer_of(name)


def test_hook_side_and_shared_use_the_standard_library_only():
    for name in MODULES:
        if layer_of(name) not in ("memory_store.hook", "memory_store.shared"):
            continue
        for imported in imports_of(name):
            top = imported.split(".")[0]
            if top == "memory_store":
                assert layer_of(imported) in ("memory_store.version", "memory_store.hook", "memory_store.shared"), \
                    f"{name} imports {imported}"
            else:
                assert top in sys.stdlib_module_names, f"{name} imports {imported} (not standard library)"


def test_layers_only_import_downwards():
    for name, imported in internal_graph().items():
        own = layer_of(name)
        for target in imported:
            other = layer_of(target)
            assert other == own or other in LAYERS[own], f"{name} ({own}) imports {target} ({other})"


def test_no_import_cycles():
    graph = internal_graph()
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in graph:
        if node not in index:
            visit(node)
    assert not cycles, f"import cycles: {cycles}"


def test_the_architecture_check_sees_every_import_form():
    """The checks above would miss what `imports_of` misses: prove it reads each form."""
    found = imports_of("memory_store.hook.client")
    assert "memory_store.shared.protocol" in found  # from ..shared import protocol
    assert "memory_store.hook.fallback" in found  # a function-level relative import
    assert "memory_store.version" in found  # from ..version import __version__
    assert "memory_store.core.later" in imports_of("memory_store.core.router")  # from . import later
    assert "memory_store.core.retrieval.gate" in imports_of("memory_store.core.router")  # from .retrieval import gate


def test_lower_layers_never_import_the_cli():
    for name, imported in internal_graph().items():
        if layer_of(name) not in ("memory_store.shells", "memory_store.devtools"):
            assert not {m for m in imported if m.startswith("memory_store.shells")}, f"{name} imports a shell"


def test_hook_fast_path_imports_almost_nothing(hooks, home, project):
    """With a worker up, a hook loads only the standard library and the hook side's lean modules, and of those no
    JSON parser, no pathlib, not even `os`: measured with -X importtime."""
    payload = load_payload("PostToolUse-Bash", cwd=str(project))
    hooks.run("SessionStart", load_payload("SessionStart-startup", cwd=str(project)))  # starts the worker
    env = dict(os.environ, CLAUDE_PLUGIN_ROOT=str(ROOT))
    result = subprocess.run([sys.executable, "-X", "importtime", "-I", "-S", str(ROOT / "hooks" / "hook.py"),
                             "PostToolUse"], input=json_bytes(payload), capture_output=True, env=env, timeout=30)
    assert result.returncode == 0 and result.stdout == b""
    modules = {line.split("|")[-1].strip() for line in result.stderr.decode().splitlines()
               if line.startswith("import time:") and "imported package" not in line}
    assert "memory_store.hook.client" in modules
    ours = {m for m in modules if m.startswith("memory_store")}
    assert ours == {"memory_store", "memory_store.version", "memory_store.hook", "memory_store.hook.client",
                    "memory_store.hook.timing", "memory_store.shared", "memory_store.shared.wire",
                    "memory_store.shared.protocol"}, ours
    assert all(m.split(".")[0] in sys.stdlib_module_names for m in modules - ours), modules - ours
    # Not even `os` (~1.5 ms of a ~10 ms hook): the fast path uses what `os` wraps (posix), built in.
    assert not modules & (HEAVY | {"json", "pathlib", "re", "socket", "subprocess", "os", "stat", "posixpath",
                                   "memory_store.hook.fallback", "memory_store.shared.paths"}), modules


def json_bytes(payload) -> bytes:
    import json

    return json.dumps(payload).encode()


def test_every_relative_link_in_the_docs_resolves():
    """A link from one Markdown file to another (or to an image) points at a file that exists."""
    broken = []
    for doc in [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("tests/**/*.md"), *ROOT.glob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_the_readme_lists_every_command():
    from memory_store.shells.cli import app

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    names = [c.name or c.callback.__name__ for c in app.registered_commands]
    names += [g.name for g in app.registered_groups]
    missing = [name for name in names if f"recall {name}" not in readme]
    assert not missing, missing


# Inside the core, each concern may import its own level and the levels below it: the vocabulary at the
# bottom, storage and embeddings on it, then capture, retrieval, injection, diagnostics, and the
# router and jobs that drive them all at the top.
CORE_LEVELS = [
    {"config", "records", "terms", "trust", "timeparse", "stages", "later", "sentences"},
    {"storage", "embedding", "knowledge"},
    {"capture"},
    {"retrieval"},
    {"injection"},
    {"diagnostics"},
    {"router", "recovery", "jobs", "forgetting"},
]
CORE_TOP_LEVEL_MAX = 12  # modules beside the sub-packages: past this, a concern wants a folder of its own


def core_level(name: str) -> int | None:
    parts = name.split(".")
    if parts[:2] != ["memory_store", "core"] or len(parts) < 3:
        return None
    for level, concerns in enumerate(CORE_LEVELS):
        if parts[2] in concerns:
            return level
    raise AssertionError(f"{name}: core/{parts[2]} is in no level of CORE_LEVELS")


def test_core_concerns_only_import_their_level_or_below():
    for name, imported in internal_graph().items():
        own = core_level(name)
        if own is None:
            continue
        for target in imported:
            other = core_level(target)
            assert other is None or other <= own, f"{name} (level {own}) imports {target} (level {other})"


def test_core_keeps_its_concerns_in_folders():
    top = [p.name for p in (PACKAGE / "core").glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= CORE_TOP_LEVEL_MAX, f"core/ has {len(top)} modules at its top level: {sorted(top)}"


SHELLS = ("memory_store.shells", "memory_store.worker")
REACH_THROUGH = re.compile(r"\.(store|models)\.")  # recall.store.x(...), self.recall.models.y
BACKEND_TEST = re.compile(r"\.backend\s*[!=]=")


def test_the_shells_and_the_worker_call_the_api_only():
    """The CLI, the viewer, the MCP server and the worker are shells over `Recall` (api/recall.py): what they need from
    the store or the models is an API method, so the API is the one place that says what they may do."""
    found = []
    for name, path in MODULES.items():
        if name.startswith(SHELLS):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if REACH_THROUGH.search(line.split("#")[0]):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, found


# What a shell would use to work on the store behind the API's back.
BEHIND_THE_API = {"memory_store.core.jobs", "memory_store.core.router", "memory_store.core.storage.store"}
STORE_OPENERS = {"open_store", "Store"}


def test_the_shells_and_the_worker_neither_open_a_store_nor_run_the_core_jobs():
    found = []
    for name, path in MODULES.items():
        if not name.startswith(SHELLS):
            continue
        found += [f"{name} imports {target}" for target in imports_of(name) & BEHIND_THE_API]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("storage"):
                found += [f"{name} imports {a.name} from storage" for a in node.names if a.name in STORE_OPENERS]
    assert not found, found


def test_only_storage_knows_which_backend_it_is():
    """Outside core/storage/ a store is asked what it can do (`capabilities()`), never which backend it is."""
    found = []
    for name, path in MODULES.items():
        if name.startswith("memory_store.core.storage"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if BACKEND_TEST.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, found


def test_the_checks_above_see_what_they_look_for():
    assert REACH_THROUGH.search("n = recall.store.counts()") and REACH_THROUGH.search("self.recall.models.embedder")
    assert not REACH_THROUGH.search("recall.store_location()")
    assert BACKEND_TEST.search('if store.backend == "sqlite":') and not BACKEND_TEST.search("print(store.backend)")


def test_every_storage_hook_is_abstract_and_both_backends_supply_them():
    from memory_store.core.storage.contract import StoreContract
    from memory_store.core.storage.postgres import PostgresStore
    from memory_store.core.storage.sqlite import SqliteStore

    assert len(StoreContract.__abstractmethods__) > 30
    assert not SqliteStore.__abstractmethods__ and not PostgresStore.__abstractmethods__


# The parameters that carry the API's shape: a store, the models, the API object. Unannotated, mypy cannot check
# what is done with them (mypy's check_untyped_defs reads the bodies, not the callers).
TYPED_PARAMETERS = {"store", "models", "recall"}


def test_the_parameters_that_carry_the_apis_shape_are_annotated():
    missing = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                missing += [f"{name}.{node.name}({arg.arg})" for arg in node.args.args + node.args.kwonlyargs
                            if arg.arg in TYPED_PARAMETERS and arg.annotation is None]
    assert not missing, missing


def test_the_public_functions_of_the_core_and_the_api_are_annotated():
    """Annotated, the core's and the API's shape is what mypy checks (and what a newcomer reads) at every call."""
    missing = []
    for name, path in MODULES.items():
        if not name.startswith(("memory_store.core", "memory_store.api")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                arguments = [a for a in node.args.args + node.args.kwonlyargs if a.arg not in ("self", "cls")]
                if node.returns is None or any(a.annotation is None for a in arguments):
                    missing.append(f"{name}.{node.name}")
    assert not missing, missing
