# shellcheck shell=sh
# Sourced by hooks/run and scripts/recall: the one place that picks recall's Python.
# with_python ARGS... runs `<python> -I -S ARGS` with the first usable Python 3:
#   $RECALL_PYTHON, the interpreter a previous hook recorded in the data dir (an absolute path:
#   no pyenv/asdf shim, which costs ~130 ms), then python3, python and py -3 from PATH.
# Returns the command's exit status, or 127 when no Python was found.
# known_python sets recall_python to the first two of those, without searching PATH; returns 1 when neither is set.
known_python() {
  recall_python=
  if [ -n "${RECALL_PYTHON:-}" ] && [ -x "$RECALL_PYTHON" ]; then
    recall_python=$RECALL_PYTHON
    return 0
  fi
  _recall_data="${RECALL_HOME:-${CLAUDE_PLUGIN_DATA:-}}"
  if [ -n "$_recall_data" ] && [ -r "$_recall_data/runtime/hook-python" ]; then
    IFS= read -r _recall_cached < "$_recall_data/runtime/hook-python"
    if [ -n "$_recall_cached" ] && [ -x "$_recall_cached" ]; then
      recall_python=$_recall_cached
      return 0
    fi
  fi
  return 1
}

with_python() {
  if known_python; then
    "$recall_python" -I -S "$@"
    return $?
  fi
  for _recall_candidate in python3 python; do
    if command -v "$_recall_candidate" >/dev/null 2>&1; then
      "$_recall_candidate" -I -S "$@"
      _recall_status=$?
      # 49 / 9009: the Windows Store stub that only opens the Store; try the next name.
      case $_recall_status in 49|9009) continue ;; esac
      return $_recall_status
    fi
  done
  if command -v py >/dev/null 2>&1; then
    py -3 -I -S "$@"
    return $?
  fi
  return 127
}
