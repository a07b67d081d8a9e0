"""What the Python tests share: the binaries under test, the fake model endpoint, rows from
NeMo Gym's conformance data and a fake-endpoint answer table built from its recorded rollouts.

ctest sets GYM_BINARY (the gym executable), GYM_FAKE_OPENAI (tests/support/gym_fake_openai)
and GYM_CONFORMANCE_DIR; run by hand, they default to the build dir beside the sources.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("GYM_BUILD_DIR", SOURCE_ROOT / "build"))
os.environ.setdefault("GYM_BINARY", str(BUILD_DIR / "src/cli/gym"))
FAKE_OPENAI = os.environ.get("GYM_FAKE_OPENAI", str(BUILD_DIR / "tests/support/gym_fake_openai"))
CONFORMANCE_DIR = Path(os.environ.get("GYM_CONFORMANCE_DIR", SOURCE_ROOT.parent / "shared/data/conformance"))

# NeMo Gym's preset files, as trainers name them in config_paths (no checkout holds them here:
# gym-cpp resolves them to its bundled presets).
VLLM_FOR_TRAINING = "responses_api_models/vllm_model/configs/vllm_model_for_training.yaml"
MULTI_STEP = ("example_multi_step", "example_multi_step_simple_agent")
SINGLE_TOOL = ("example_single_tool_call", "example_single_tool_call_simple_agent")


def env_config_path(env: str) -> str:
    return f"resources_servers/{env}/configs/{env}.yaml"


def read_jsonl(path: Path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def conformance_file(env: str, name: str) -> Path:
    path = CONFORMANCE_DIR / env / name
    if not path.exists():
        raise AssertionError(
            f"NeMo Gym's conformance data is missing: {path}. Set GYM_CONFORMANCE_DIR to the folder "
            "that holds <env>/example.jsonl and <env>/example_rollouts.jsonl"
        )
    return path


def dataset_rows(env: str, agent: str) -> list[dict]:
    """NeMo Gym's example rows of `env`, each with the agent_ref a prepared dataset carries."""
    rows = read_jsonl(conformance_file(env, "example.jsonl"))
    for row in rows:
        row["agent_ref"] = {"name": agent}
    return rows


# ---- The fake endpoint's answers, from NeMo Gym's recorded rollouts ----


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def _chat_messages(items: list) -> list[dict]:
    """Responses input items as the chat messages vllm_model sends for them."""
    out: list[dict] = []
    assistant = None
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call_output":
            out.append({"role": "tool", "content": item["output"], "tool_call_id": item["call_id"]})
            assistant = None
        elif kind in ("function_call", "reasoning") or item.get("role") == "assistant":
            if assistant is None:
                assistant = {"role": "assistant", "content": ""}
                out.append(assistant)
            if kind == "function_call":
                assistant.setdefault("tool_calls", []).append(
                    {"id": item["call_id"], "type": "function",
                     "function": {"name": item["name"], "arguments": item["arguments"]}}
                )
            elif kind == "message":
                assistant["content"] += _text(item.get("content"))
        else:
            out.append({"role": item["role"], "content": _text(item.get("content"))})
            assistant = None
    return out


def _chat_answer(turn: list, reasoning: str | None) -> dict:
    content = "".join(_text(i.get("content")) for i in turn if i["type"] == "message")
    calls = [
        {"id": i["call_id"], "type": "function", "function": {"name": i["name"], "arguments": i["arguments"]}}
        for i in turn
        if i["type"] == "function_call"
    ]
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = reasoning
    return {
        "id": "chatcmpl-recorded",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "recorded",
        "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": message}],
    }


def write_answer_table(envs: list[str], path: Path, reasoning: str | None = None) -> int:
    """For every recorded rollout of `envs` and every model turn: the conversation so far and
    that turn's answer (with `reasoning` as the model's reasoning when given). Returns the turns."""
    turns = 0
    with open(path, "w") as out:
        for env in envs:
            for row in read_jsonl(conformance_file(env, "example_rollouts.jsonl")):
                given = row["responses_create_params"]["input"]
                items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given)
                output = row["response"]["output"]
                i = 0
                while i < len(output):
                    j = i
                    while j < len(output) and output[j]["type"] != "function_call_output":
                        j += 1
                    turn = [o for o in output[i:j] if o["type"] != "reasoning"]
                    if turn:
                        out.write(json.dumps({"messages": _chat_messages(items), "response": _chat_answer(turn, reasoning)}) + "\n")
                        turns += 1
                    items += output[i:j]
                    i = j
                    while i < len(output) and output[i]["type"] == "function_call_output":
                        items.append(output[i])
                        i += 1
    return turns


# ---- Processes ----


def training_config(envs: list[str], fake_url: str, **extra) -> dict:
    """The initial config of a loopback deployment of `envs` on vllm_model_for_training."""
    return {
        "head_server": {"host": "127.0.0.1", "port": 0},
        "config_paths": [env_config_path(e) for e in envs] + [VLLM_FOR_TRAINING],
        "policy_base_url": fake_url,
        "policy_model_name": "m",
        **extra,
    }


def start_gym(test: unittest.TestCase, initial: dict):
    """RunHelper started on `initial`, shut down when `test` ends."""
    from nemo_gym.cli import GlobalConfigDictParserConfig, RunHelper

    rh = RunHelper()
    test.addCleanup(rh.shutdown)
    rh.start(GlobalConfigDictParserConfig(initial_global_config_dict=initial, skip_load_from_cli=True))
    return rh


class FakeEndpoint:
    """tests/support/gym_fake_openai on 127.0.0.1, port 0. Its GET /v1/models lists
    `served_models` (training_config's policy_model_name by default): gym checks it at start."""

    def __init__(self, *args: str, served_models: tuple[str, ...] = ("m",)):
        served = [a for name in served_models for a in ("--served-model", name)]
        self.process = subprocess.Popen(
            [FAKE_OPENAI, *args, *served], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        line = self.process.stdout.readline()
        if not line.startswith("LISTENING "):
            self.process.kill()
            raise AssertionError(f"the fake endpoint did not start: {line!r}")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._drain = threading.Thread(target=self.process.stdout.read, daemon=True)
        self._drain.start()

    def received(self) -> list[dict]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/received", timeout=10) as r:
            return json.loads(r.read())["requests"]

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._drain.join(timeout=5)
        self.process.stdout.close()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, IndexError):
        return False


def wait_gone(pids, seconds: float = 20.0) -> list[int]:
    """The pids still running after `seconds` (none, normally)."""
    deadline = time.monotonic() + seconds
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


def descendants(pid: int) -> list[int]:
    """Every live process whose parent chain reaches `pid`."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, IndexError, ValueError):
                pass
    found, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        found += kids
        frontier += kids
    return found


class WorkDirTestCase(unittest.TestCase):
    """Each test runs in its own empty working directory: nothing of the checkout is found
    there, as for a trainer running from its own folder."""

    def setUp(self) -> None:
        self._old_cwd = os.getcwd()
        self._tmp = tempfile.TemporaryDirectory(prefix="gym-py-test-")
        self.work = Path(self._tmp.name)
        os.chdir(self.work)

    def tearDown(self) -> None:
        os.chdir(self._old_cwd)
        self._tmp.cleanup()


def deep(obj):
    return copy.deepcopy(obj)
