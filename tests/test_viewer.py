"""`recall ui` in a real headless Chromium (Debian's `chromium`, driven by Playwright): it loads with the
token, shows a stored memory and an injection with its reasons, forgets from the page, and refuses a
request without the token. Screenshots go to the test's tmp dir (RECALL_SCREENSHOTS=DIR: there instead)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import ROOT
from test_hooks import first_session, session

from memory_store import open_recall
from memory_store.shared.paths import DataPaths
from memory_store.shared.worker_client import stop_worker

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None or CHROMIUM is None:
        if os.environ.get("RECALL_REQUIRE_E2E"):
            pytest.fail("the viewer test needs Playwright and Debian's chromium (.ci/run installs both)")
        pytest.skip("Playwright or chromium not installed")
    with sync_playwright() as playwright:
        # One browser process, not a dozen (zygotes, GPU, network, renderers): the suite's memory peaks while this
        # test runs, and the page needs none of them to be checked.
        chromium = playwright.chromium.launch(executable_path=CHROMIUM,
                                              args=["--no-sandbox", "--disable-gpu", "--no-zygote", "--single-process"])
        try:
            yield chromium
        finally:
            chromium.close()


@contextmanager
def served(recall):
    """The viewer over `recall` on a loopback port, in a thread: (base URL, token); stopped on leaving."""
    from memory_store.shells.viewer import make_server

    server, url = make_server(recall)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tuple(url.split("/?token="))
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def viewer(home):
    """`recall ui --no-browser` as a user starts it; yields its URL (with the token)."""
    proc = subprocess.Popen([sys.executable, "-m", "memory_store.shells.cli", "ui", "--no-browser", "--home",
                             str(home)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
        assert match, line + proc.stderr.read()
        yield match.group(0)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_viewer_in_chromium(hooks, home, project, browser, viewer, tmp_path):
    shots = Path(os.environ.get("RECALL_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    first_session(hooks, project)
    send = session(hooks, project)
    # No SessionStart first: its brief would show the fact, and a session is shown a memory once.
    send("UserPromptSubmit", prompt="How do staging deploys work again, which script and flag?", prompt_id="q1")
    stop_worker(DataPaths(home))  # politely: the browser's environment names this data dir too
    base, token = viewer.split("/?token=")

    page = browser.new_page(viewport={"width": 1200, "height": 800})
    page.goto(viewer)
    assert str(project) in page.inner_text("main")
    page.screenshot(path=str(shots / "viewer-projects.png"), full_page=True)

    page.goto(f"{base}/injections?token={token}")
    text = page.inner_text("main")
    assert "How do staging deploys work again" in text and "why: relevant: " in text and "ship.sh" in text
    page.screenshot(path=str(shots / "viewer-injections.png"), full_page=True)

    page.goto(f"{base}/search?token={token}&q=canary+flag&project={project}&kind=prompt")
    rows = page.locator("table tr")
    assert rows.count() >= 2 and "--canary" in page.inner_text("table")
    page.screenshot(path=str(shots / "viewer-search.png"), full_page=True)

    # A query about nothing recall holds: says so, and offers the closest matches anyway.
    page.goto(f"{base}/search?token={token}&q=zzqxj+wombat&project={project}")
    assert "Nothing relevant found" in page.inner_text("main") and page.locator("table").count() == 0
    page.get_by_role("link", name="show the closest matches anyway").click()
    assert "all=1" in page.url and page.get_by_role("link", name="only what is relevant").count() == 1

    page.goto(f"{base}/search?token={token}&q=canary+flag&project={project}&kind=prompt")
    page.locator("table a").first.click()
    assert "Timeline" in page.inner_text("main")
    memory_id = int(re.search(r"/memory/(\d+)", page.url).group(1))
    page.screenshot(path=str(shots / "viewer-memory.png"), full_page=True)
    page.get_by_role("button", name="Pin").click()
    assert "pinned" in page.inner_text(".card")
    # Forgetting asks first, on a page of its own (no script): "Keep it" keeps it, the button deletes.
    page.get_by_role("link", name="Forget for good").click()
    assert f"Forget #{memory_id} for good?" in page.inner_text("main")
    page.screenshot(path=str(shots / "viewer-forget.png"), full_page=True)
    page.get_by_role("link", name="Keep it").click()
    with open_recall(home, load_models=False) as recall:
        assert [m.id for m in recall.get([memory_id])] == [memory_id]
    page.get_by_role("link", name="Forget for good").click()
    page.get_by_role("button", name=f"Forget #{memory_id} for good").click()
    page.goto(f"{base}/memory/{memory_id}?token={token}")
    assert f"No memory #{memory_id}" in page.inner_text("main")
    with open_recall(home, load_models=False) as recall:
        assert recall.get([memory_id]) == []

    # Without the token, or with a wrong one: 403, for pages and for actions alike; a forget without the
    # confirmation deletes nothing.
    for url, data in ((f"{base}/", None), (f"{base}/search?q=canary", None), (f"{base}/?token=wrong", None),
                      (f"{base}/memory/1/forget", b"token=wrong")):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10)
        assert refused.value.code == 403


def test_the_injections_page_shows_each_brief_once_and_an_exchanges_question(home):
    """Each new session is offered the same brief: the page listed the same memories card after card, and an
    exchange without the question it answered."""
    import time

    from memory_store.core.records import MemoryDraft
    from memory_store.shells.viewer import Viewer

    now = time.time()
    with open_recall(home, load_models=False) as recall:
        answer = recall.store.record("e1", MemoryDraft(
            project="/p", session_id="s0", kind="exchange", text="It needs the --canary flag.", created_at=now - 60,
            meta={"prompt": "Which flag does the staging deploy need?"})).memory_id
        for n, session in enumerate(("s1", "s2", "s3")):
            recall.store.add_receipt(session, "/p", "SessionStart", now + n, None, [(answer, "recent work")])
        page = Viewer(recall, "t0k3n").injections({})
        viewport = Viewer(recall, "t0k3n").page("x", "")
    assert page.count("It needs the --canary flag.") == 1 and page.count("the same 1 memories as the brief") == 2
    assert "<b>Q:</b> Which flag does the staging deploy need? <b>A:</b> It needs" in page
    assert 'name="viewport"' in viewport


def test_a_session_page_and_an_export_over_http(home):
    """The viewer had no session view and no export: a session's memories in order, and a project's memories as the
    JSONL `recall export` writes, served to a browser that carries the token."""
    import json
    import time

    from memory_store.core.records import MemoryDraft

    now = time.time()
    with open_recall(home, load_models=False) as recall:
        for n, text in enumerate(["first: the staging deploy needs --canary", "second: done, it passed"]):
            recall.store.record(f"e{n}", MemoryDraft(project="/p", session_id="s/1", kind="note", text=text,
                                                     created_at=now + n))
        with served(recall) as (base, token):
            page = urllib.request.urlopen(f"{base}/session/s%2F1?token={token}").read().decode()
            assert page.index("first: the staging") < page.index("second: done") and "what was injected" in page
            with urllib.request.urlopen(f"{base}/export?project=%2Fp&token={token}") as answer:
                assert "attachment" in answer.headers["Content-Disposition"]
                rows = [json.loads(line) for line in answer.read().decode().splitlines()]
            assert sorted(r["text"] for r in rows)[0].startswith("first: the staging")
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(f"{base}/export?project=%2Fp&token=wrong")
            odd = urllib.request.urlopen(urllib.request.Request(  # a digit Python reads but int() does not
                f"{base}/forget", data=f"token={token}&id=%C2%B2".encode(), method="POST")).read().decode()
            assert "Nothing to forget" in odd


def test_ticked_search_results_are_forgotten_after_one_confirmation(home):
    import time

    from memory_store.core.records import MemoryDraft
    from memory_store.shells.viewer import Viewer

    now = time.time()
    with open_recall(home, load_models=False) as recall:
        ids = [recall.store.record(f"e{n}", MemoryDraft(project="/p", session_id="s", kind="note", text=text,
                                                        created_at=now + n)).memory_id
               for n, text in enumerate(["the old deploy key is in vault", "the old deploy host is gone", "keep me"])]
        viewer = Viewer(recall, "t0k3n")
        page = viewer.search({"project": "/p"})
        assert page.count('type="checkbox" name="id"') == 3 and 'action="/forget"' in page
        status, confirm = viewer.confirm_forget_many(ids[:2])
        assert status == 200 and "Forget these 2 memories for good?" in confirm and "keep me" not in confirm
        assert recall.get(ids[:2])  # nothing forgotten before the confirmation
        viewer.forget_many(ids[:2])
        assert [m.id for m in recall.get(ids)] == [ids[2]]


def test_the_facts_page_shows_current_values_with_what_they_replaced(home, tmp_path):
    """A project's facts page: the current value of a setting, the one it replaced, and a link to its memory. Two
    real edits of a file through the router, read in the background as the worker reads them."""
    import time
    import uuid

    from conftest import load_payload

    from memory_store.shared.projects import project_for

    project = tmp_path / "shop"
    (project / "jobs").mkdir(parents=True)
    with open_recall(home) as recall:
        for n, (old, new) in enumerate([("MAX_RETRIES = 3", "MAX_RETRIES = 5"), ("MAX_RETRIES = 5", "MAX_RETRIES = 8")]):
            path = str(project / "jobs" / "config.py")
            payload = load_payload("PostToolUse-Edit", session_id=f"s{n}", cwd=str(project), tool_input={
                "file_path": path, "old_string": old, "new_string": new}, tool_response={
                "filePath": path, "oldString": old, "newString": new, "originalFile": f"{old}\n", "structuredPatch": []})
            recall.handle_event({"event_id": uuid.uuid4().hex, "received_at": time.time() + n, "payload": payload})
        recall.embed_pending()
        with served(recall) as (base, token):
            name = urllib.parse.quote(project_for(str(project)), safe="")
            page = urllib.request.urlopen(f"{base}/facts?project={name}&token={token}").read().decode()
            current = page.index("MAX_RETRIES = 8")
            assert current < page.index("was 5") and "/memory/2" in page
            assert "facts</a>" in urllib.request.urlopen(f"{base}/?token={token}").read().decode()

