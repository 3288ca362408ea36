"""Write memory_store/hook/mcp_tools.json: the MCP server's instructions and tool list, as its SDK states them, for
the stand-in server that answers while recall's Python is being set up (hook/mcp_standin.py, standard library only).
tests/test_mcp_standin.py fails when the file and the server differ: run `python -m memory_store.shells.mcp_tools`.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from ..hook.mcp_standin import TOOLS_FILE


def described() -> dict:
    """The real server's instructions and tools, as JSON the protocol carries."""
    from .mcp_server import build_server

    with tempfile.TemporaryDirectory() as home:
        server = build_server(home)
        tools = asyncio.run(server.list_tools())
    return {"instructions": server.instructions,
            "tools": [tool.model_dump(mode="json", exclude_none=True, by_alias=True) for tool in tools]}


def main() -> None:
    Path(TOOLS_FILE).write_text(json.dumps(described(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {TOOLS_FILE}")


if __name__ == "__main__":
    main()
