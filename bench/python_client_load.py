"""Rollouts from Python (`nemo_gym` RolloutCollectionHelper.run_examples, as trainers call it)
vs `gym eval run --no-serve`, on one running deployment, interleaved.

  python3 bench/python_client_load.py [--gym build/src/cli/gym]
      [--python build/tests/python/venv/bin/python] [--levels 64,1024,4096] [--rounds 3]
      [--rollouts 64:3072,1024:4096,4096:8192] [--tasks 2048]

Workload: bench/e2e_data.py's `example_single_tool_call` weather tasks through `replay_model`
(7 HTTP exchanges per rollout, no language model), one `gym env start` for the whole run with
`global_aiohttp_connector_limit_per_host` raised to 16384 (what NeMo RL and TRL set). At every
level, ROUNDS times: `gym eval run --no-serve --concurrency C`, the Python client with an
asyncio.Semaphore(C) around run_examples, and aiohttp alone (the same POSTs to the agent's /run,
no nemo_gym code: the floor under the client), each for the same number of rollouts. Measured per run
(the same way for both, as a child process of this script): wall time from start to exit ->
rollouts/s, and the process's user+system CPU time -> CPU per rollout. Every run must give every
rollout with reward 1.0. Prints a markdown table of medians: the Python client's rollouts/s as a
share of gym eval run's (the goal: at least 80 % at 1,024 in flight) and both CPU per rollout.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CLIENT = r"""
import asyncio, json, sys, time
from nemo_gym.rollout_collection import RolloutCollectionHelper
from nemo_gym.server_utils import BaseServerConfig
port, path, n, concurrency = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tasks = [json.loads(l) for l in open(path)]
rows = []
for i in range(n):
    row = dict(tasks[i % len(tasks)])
    row["agent_ref"] = {"name": "example_single_tool_call_simple_agent"}
    row["_rowidx"] = i
    rows.append(row)
async def main():
    rewarded = 0
    for task in RolloutCollectionHelper().run_examples(
            rows, head_server_config=BaseServerConfig(host="127.0.0.1", port=port),
            semaphore=asyncio.Semaphore(concurrency)):
        row, result = await task
        rewarded += result["reward"] == 1.0
    return rewarded
print(json.dumps({"rewarded": asyncio.run(main())}))
"""

# The floor under the client: aiohttp alone, one session, the same rows POSTed to the agent's
# /run with the same concurrency bound, bodies parsed, no nemo_gym code.
BARE = r"""
import asyncio, json, sys, urllib.request
import aiohttp
port, path, n, concurrency = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
config = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/server_instances").read())
agent = next(i["port"] for i in config if i["process_name"] == "example_single_tool_call_simple_agent")
tasks = [json.loads(l) for l in open(path)]
async def main():
    rewarded = 0
    limit = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, limit_per_host=0),
                                     cookie_jar=aiohttp.DummyCookieJar()) as http:
        async def one(i):
            nonlocal rewarded
            row = dict(tasks[i % len(tasks)])
            row["agent_ref"] = {"name": "example_single_tool_call_simple_agent"}
            async with limit:
                async with http.post(f"http://127.0.0.1:{agent}/run", data=json.dumps(row).encode(),
                                     headers={"Content-Type": "application/json"}) as r:
                    rewarded += json.loads(await r.read())["reward"] == 1.0
        await asyncio.gather(*(one(i) for i in range(n)))
    return rewarded
print(json.dumps({"rewarded": asyncio.run(main())}))
"""


def timed(command: list[str]) -> tuple[float, float, str]:
    """Runs `command`; its wall seconds, CPU seconds (user + system) and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{command[0]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gym", default=str(REPO / "build/src/cli/gym"))
    ap.add_argument("--python", default=str(REPO / "build/tests/python/venv/bin/python"))
    ap.add_argument("--levels", default="64,1024,4096")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rollouts", default="64:3072,1024:4096,4096:8192")
    ap.add_argument("--tasks", type=int, default=2048)
    args = ap.parse_args()
    rollouts = {int(k): int(v) for k, v in (p.split(":") for p in args.rollouts.split(","))}
    levels = [int(x) for x in args.levels.split(",")]

    tmp = Path(tempfile.mkdtemp(prefix="gym-pyclient-bench-"))
    subprocess.run([sys.executable, str(REPO / "bench/e2e_data.py"), "--out-dir", str(tmp), "--name", "weather",
                    "--tasks", str(args.tasks)], check=True, capture_output=True)
    data = tmp / "weather.jsonl"
    env = subprocess.Popen(
        [args.gym, "env", "start", "--resources-server", "example_single_tool_call", "--model-type", "replay_model",
         f"++input_jsonl_fpath={data}", "++head_server.port=0", "++global_aiohttp_connector_limit_per_host=16384"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp)
    port = None
    for line in env.stdout:
        if m := re.match(r"Head server at http://[^:]+:(\d+)", line):
            port = int(m[1])
        if "servers ready!" in line:
            break
    if port is None or env.poll() is not None:
        sys.exit("gym env start did not come up")
    threading.Thread(target=env.stdout.read, daemon=True).start()

    results: dict[int, dict[str, list[float]]] = {}
    try:
        for c in levels:
            n = rollouts[c]
            limit = min(n, args.tasks)
            repeats = -(-n // limit)
            n = limit * repeats
            r = results.setdefault(c, {k: [] for k in ("ours_rps", "py_rps", "bare_rps", "ours_cpu", "py_cpu", "bare_cpu")})
            for round_ in range(args.rounds):
                out = tmp / f"ours_{c}_{round_}.jsonl"
                wall, cpu, _ = timed([args.gym, "eval", "run", "--no-serve", f"++head_server.port={port}", "--input",
                                      str(data), "--output", str(out), "--agent", "example_single_tool_call_simple_agent",
                                      "--limit", str(limit), "--num-repeats", str(repeats), "--concurrency", str(c),
                                      "--disable-aggregation", "-q"])
                with open(out) as f:
                    rows = [json.loads(l) for l in f]
                if len(rows) != n or any(x.get("reward") != 1.0 for x in rows):
                    sys.exit(f"gym eval run at {c}: {len(rows)} rows of {n}, not all rewarded")
                r["ours_rps"].append(n / wall)
                r["ours_cpu"].append(cpu / n * 1e6)
                wall, cpu, stdout = timed([args.python, "-c", CLIENT, str(port), str(data), str(n), str(c)])
                if json.loads(stdout.strip().splitlines()[-1])["rewarded"] != n:
                    sys.exit(f"python client at {c}: not every rollout rewarded: {stdout[-500:]}")
                r["py_rps"].append(n / wall)
                r["py_cpu"].append(cpu / n * 1e6)
                wall, cpu, stdout = timed([args.python, "-c", BARE, str(port), str(data), str(n), str(c)])
                if json.loads(stdout.strip().splitlines()[-1])["rewarded"] != n:
                    sys.exit(f"bare aiohttp at {c}: not every rollout rewarded: {stdout[-500:]}")
                r["bare_rps"].append(n / wall)
                r["bare_cpu"].append(cpu / n * 1e6)
                print(f"c={c} round {round_ + 1}: gym eval run {r['ours_rps'][-1]:.0f}/s "
                      f"({r['ours_cpu'][-1]:.0f} us CPU/rollout), python {r['py_rps'][-1]:.0f}/s "
                      f"({r['py_cpu'][-1]:.0f} us CPU/rollout), aiohttp alone {r['bare_rps'][-1]:.0f}/s "
                      f"({r['bare_cpu'][-1]:.0f} us)", flush=True)
    finally:
        env.send_signal(2)
        env.wait(timeout=60)

    print("\n| in flight | rollouts/run | `gym eval run` rollouts/s | Python `run_examples` rollouts/s | Python / gym | "
          "aiohttp alone / gym | CPU per rollout: collector | Python client | aiohttp alone |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for c, r in results.items():
        med = {k: statistics.median(v) for k, v in r.items()}
        n = min(rollouts[c], args.tasks) * -(-rollouts[c] // min(rollouts[c], args.tasks))
        print(f"| {c} | {n} | {med['ours_rps']:.0f} | {med['py_rps']:.0f} | {med['py_rps'] / med['ours_rps']:.0%} | "
              f"{med['bare_rps'] / med['ours_rps']:.0%} | {med['ours_cpu']:.0f} µs | {med['py_cpu']:.0f} µs | "
              f"{med['bare_cpu']:.0f} µs |")
    print(f"\n(medians of {args.rounds} interleaved rounds; data and outputs in {tmp})")


if __name__ == "__main__":
    main()
