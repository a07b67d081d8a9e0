"""`RunHelper`: a deployment of gym-cpp servers started and supervised from Python.

`RunHelper().start(GlobalConfigDictParserConfig(...))` runs `gym env start` on the caller's
config and returns once every server answers; `poll()` raises once gym or any of its servers
is gone; `shutdown()` stops everything (also at interpreter exit) and leaves no process behind.
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

from nemo_gym._gym_binary import find_gym_binary
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.global_config import (
    GlobalConfigDictParserConfig,
    get_global_config_dict,
    set_global_config_dict,
    to_plain,
)
from nemo_gym.server_utils import ServerClient, _get, _local

__all__ = ["GlobalConfigDictParserConfig", "RunHelper", "get_global_config_dict"]

_HEAD_LINE = re.compile(r"^Head server at http://(?P<host>[^\s]+):(?P<port>\d+)\s*$")
_READY_LINE = re.compile(r"^All (\d+) / \1 servers ready!\s*$")
_LAST_LINES = 60  # of gym's output, kept for error messages
_STOP_GRACE_SECONDS = 30.0  # gym gives its servers 8 s (shutdown_grace_seconds) by default
_REAP_SECONDS = 10.0


class RunHelper:
    """Starts, watches and stops one `gym env start` (the head server and every server)."""

    def __init__(self) -> None:
        self._process: Optional[subprocess.Popen] = None
        self._lines: collections.deque[str] = collections.deque(maxlen=_LAST_LINES)
        self._head: Optional[BaseServerConfig] = None
        self._ready = threading.Event()
        self._reader: Optional[threading.Thread] = None
        self._server_pids: dict[str, int] = {}
        self._private_dir: Optional[str] = None
        self._lock = threading.Lock()
        self._server_client: Optional[ServerClient] = None

    # ---- start ----

    def start(self, global_config_dict_parser_config: GlobalConfigDictParserConfig) -> None:
        """Runs `gym env start` on the config and blocks until every server answers. Raises
        RuntimeError with gym's exit status and its last output if gym exits first (a config
        error, a busy port, a server that crashed, an unreachable model endpoint...)."""
        if self._process is not None:
            raise RuntimeError("this RunHelper already started a deployment; call shutdown() first")
        # The initial dict may hold keys: it is written to a file only this user can read,
        # removed once gym has read it.
        self._private_dir = tempfile.mkdtemp(prefix="gym-run-")
        os.chmod(self._private_dir, 0o700)
        try:
            command = [
                find_gym_binary(),
                "env",
                "start",
                *global_config_dict_parser_config.gym_arguments(Path(self._private_dir)),
            ]
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                bufsize=1,
                start_new_session=True,  # Ctrl-C in the trainer's terminal is the trainer's
            )
            atexit.register(self.shutdown)
            self._reader = threading.Thread(target=self._read_output, name="gym-env-start-output", daemon=True)
            self._reader.start()
            self._wait_until_ready()
        except BaseException:
            self.shutdown()
            raise
        finally:
            self._remove_private_dir()
        self._server_client = ServerClient.load_from_global_config(self._head)
        set_global_config_dict(to_plain(self._server_client.global_config_dict))
        self._server_pids = self._fetch_server_pids()

    def _read_output(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            line = line.rstrip("\n")
            with self._lock:
                self._lines.append(line)
            print(line, flush=True)
            if self._head is None and (m := _HEAD_LINE.match(line)):
                self._head = BaseServerConfig(host=m["host"], port=int(m["port"]))
            elif _READY_LINE.match(line):
                self._ready.set()

    def _wait_until_ready(self) -> None:
        # gym bounds every wait itself (server_readiness_timeout_seconds,
        # model_endpoint_readiness_timeout_seconds) and exits saying why.
        while not self._ready.wait(timeout=0.2):
            if self._process.poll() is not None:
                self._reader.join(timeout=5)
                if self._ready.is_set():
                    break
                raise RuntimeError(self._exit_story("exited before its servers were ready"))
        if self._head is None:
            raise RuntimeError(self._exit_story("said it was ready without naming its head server"))

    def _exit_story(self, what: str) -> str:
        code = self._process.poll() if self._process else None
        with self._lock:
            last = "\n".join(self._lines)
        status = f"exit code {code}" if code is not None and code >= 0 else f"signal {-code}" if code else "running"
        return f"`gym env start` {what} ({status}). Its last output:\n{last}"

    def _fetch_server_pids(self) -> dict[str, int]:
        url = f"http://{_local(self._head.host)}:{self._head.port}/server_instances"
        instances = json.loads(_get(url, timeout=30))
        return {i["process_name"]: int(i["pid"]) for i in instances if isinstance(i.get("pid"), int)}

    def _remove_private_dir(self) -> None:
        if self._private_dir:
            shutil.rmtree(self._private_dir, ignore_errors=True)
            self._private_dir = None

    # ---- supervision ----

    @property
    def head_server_config(self) -> Optional[BaseServerConfig]:
        """Where the head server listens (the port the OS chose when the config said 0)."""
        return self._head

    def poll(self) -> None:
        """Raises RuntimeError once gym or any of its servers has exited."""
        if self._process is None:
            raise RuntimeError("no deployment: start() was not called, or shutdown() was")
        if self._process.poll() is not None:
            self._reader.join(timeout=5)
            raise RuntimeError(self._exit_story("finished unexpectedly"))
        for name, pid in self._server_pids.items():
            if not _alive(pid):
                raise RuntimeError(f"Process `{name}` (pid {pid}) finished unexpectedly!\n" + self._exit_story("is stopping"))

    def run_forever(self) -> None:
        """Polls every 60 s until Ctrl-C or a failure, then shuts down (NeMo Gym's CLI loop)."""
        try:
            while True:
                self.poll()
                time.sleep(60)
        except KeyboardInterrupt:
            pass
        finally:
            self.shutdown()

    # ---- stop ----

    def shutdown(self) -> None:
        """Stops gym and every server; safe to call any number of times."""
        process, self._process = self._process, None
        self._remove_private_dir()
        if process is None:
            return
        atexit.unregister(self.shutdown)
        if process.poll() is None:
            print("Stopping gym-cpp servers...", flush=True)
            process.send_signal(signal.SIGINT)  # gym stops its servers, then exits
            try:
                process.wait(timeout=_STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                _kill_group(process.pid)
                process.wait(timeout=_REAP_SECONDS)
        # Servers die with gym (parent-death signal); make sure before returning.
        deadline = time.monotonic() + _REAP_SECONDS
        for pid in self._server_pids.values():
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(pid):
                _kill_group(pid)
        if self._reader is not None:
            self._reader.join(timeout=5)
        if process.stdout is not None and (self._reader is None or not self._reader.is_alive()):
            process.stdout.close()
        self._server_pids = {}
        self._server_client = None


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting to be reaped does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True


def _kill_group(pid: int) -> None:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
            return
        except (ProcessLookupError, PermissionError):
            continue


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use the `gym` binary for the command line")
