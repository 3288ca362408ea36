"""`python -m memory_store.shells.cli`: what scripts/recall and the plugin's .mcp.json run."""

from . import main

main()
