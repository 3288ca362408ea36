"""Standard library only: what the hook process, the worker and the CLI share.

The wire protocol (`protocol`), the data-dir layout (`paths`), the spool of events no worker
took yet (`spool`), the rules for reading a hook payload (`payload`), and the foundations every
layer uses: the privacy filter (`redact`), JSON logs (`logs`), safe file writes (`files`) and
text capping (`text`). Nothing here imports from the rest of the package.
"""
