"""Memories checked against the code: a file a memory names that is gone from the project is marked where the
memory is shown (brief, injection, search), and a memory whose file a newer memory names elsewhere is left out."""

from __future__ import annotations

import shutil
import time
import uuid

from memory_store.core.sentences import named_paths
from memory_store.shared.text import MISSING_FILE_MARK as MARK

HOLDS = "The hold expiry is computed in src/seats/holds.py, in expire_holds(), every 30 seconds."
REPORT = "The nightly report is built by src/reports/nightly.py from the orders table at 02:00 UTC."
MOVED = "I moved the hold logic out of the seats package: it now lives in src/booking/holds.py, same function."


def write(project, relative):
    path = project / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# code\n")


def context(output) -> str:
    return (output or {}).get("hookSpecificOutput", {}).get("additionalContext", "")


def test_named_paths_are_files_of_the_project_not_urls_or_prose():
    text = ("edit src/app/db.py and ./bin/run.sh, see https://github.com/acme/shop/blob/main/x.py and "
            "docs.python.org/3/library/re.html; and/or TCP/IP on 2024/05/01; .github/workflows/ci.yml:12")
    assert named_paths(text) == ["src/app/db.py", "./bin/run.sh", ".github/workflows/ci.yml"]


def test_a_gone_file_is_marked_and_a_moved_one_leaves_its_old_memory_out(demo, recall, project):
    demo.clock = time.time() - 3 * 3600
    write(project, "src/seats/holds.py")
    write(project, "src/reports/nightly.py")
    write(project, "src/reports/weekly.py")
    demo.session(("where does the seat hold expiry live?", HOLDS),
                 ("where is the nightly report built?", REPORT))
    hits = recall.search("where is the seat hold expiry computed?", project=str(project), shown="relevant")
    assert hits and "holds.py" in hits[0].text and hits[0].missing_files == [] and MARK not in hits[0].marked_text()

    # The code changes: holds.py moves (a later session says where), nightly.py is deleted (nothing says why).
    (project / "src/booking").mkdir()
    shutil.move(project / "src/seats/holds.py", project / "src/booking/holds.py")
    (project / "src/reports/nightly.py").unlink()
    demo.session(("can you move the hold logic out of the seats package?", MOVED))

    report = recall.search("where is the nightly report built?", project=str(project), shown="relevant")
    assert report and report[0].missing_files == ["src/reports/nightly.py"]
    assert f"src/reports/nightly.py {MARK}" in report[0].marked_text()
    holds = recall.search("where is the seat hold expiry computed?", project=str(project), shown="relevant")
    assert holds and all("src/seats/holds.py" not in h.text for h in holds)
    assert any("src/booking/holds.py" in h.text for h in holds)
    everything = recall.search("where is the seat hold expiry computed?", project=str(project), shown="all")
    old = [h for h in everything if "src/seats/holds.py" in h.text]
    assert old and old[0].missing_files == ["src/seats/holds.py"]  # --all shows it, marked

    session = str(uuid.uuid4())
    brief = context(demo.fire("SessionStart-startup", session))
    assert f"src/reports/nightly.py {MARK}" in brief
    assert "src/seats/holds.py" not in brief and "src/booking/holds.py" in brief
    # A session that was not given the brief (it started before these sessions): the prompt's injection.
    asked = context(demo.fire("UserPromptSubmit", str(uuid.uuid4()), prompt_id="t1",
                              prompt="remind me, which file builds the nightly report from the orders table?"))
    assert f"src/reports/nightly.py {MARK}" in asked

    # A path written from another folder, or outside the project, is never judged.
    write(project, "web/components/Button.tsx")
    from memory_store.core.retrieval.code_paths import CodeCheck

    check = CodeCheck(recall.store, str(project))
    assert check.missing("components/Button.tsx, /etc/nginx/nginx.conf, src/reports/weekly.py") == []
    assert check.missing("src/reports/monthly.py") == ["src/reports/monthly.py"]
