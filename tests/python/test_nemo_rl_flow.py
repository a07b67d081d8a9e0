"""NeMo RL's `NemoGym` Ray actor, call by call, over gym-cpp (without Ray).

The actor (nemo_rl/environments/nemo_gym.py in NVIDIA-NeMo/RL) builds an initial config dict
with one policy URL per data-parallel rank, a `default_host`, a port range, Ray's address and
the connector limits, starts NeMo Gym with `RunHelper.start` (a DictConfig, a dotenv path that
usually does not exist, skip_load_from_cli), and streams rollouts from `run_examples`,
classifying a failure by the exception's int `.status`, then checks token contiguity while
turning each rollout into a message log. `health_check` is `RunHelper.poll`; teardown is
`shutdown`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import unittest
import urllib.request
from pathlib import Path

import support
from omegaconf import DictConfig

from nemo_gym.cli import GlobalConfigDictParserConfig, RunHelper
from nemo_gym.rollout_collection import RolloutCollectionHelper
from nemo_gym.server_utils import HEAD_SERVER_KEY_NAME, BaseServerConfig


class GymTransportError(Exception):
    pass


class RolloutDataFailure(Exception):
    pass


def typed_gym_failure(error: Exception):
    """NeMo RL's classification: only an exception with an int `.status` is an HTTP failure."""
    status = getattr(error, "status", None)
    if not isinstance(status, int):
        return None
    detail = f"NeMo-Gym /run failed with HTTP {status}: {error}"
    return GymTransportError(detail) if status >= 500 or status in (408, 429) else RolloutDataFailure(detail)


def message_log(result: dict) -> list[dict]:
    """NeMo RL's postprocessing: the trainable turns as user/assistant token messages."""
    log, seen = [], []
    for item in result["response"]["output"]:
        if not item.get("generation_token_ids"):
            continue
        assert seen == item["prompt_token_ids"][: len(seen)], "Non-contiguous messages found!"
        prompt = item.pop("prompt_token_ids")
        generation = item.pop("generation_token_ids")
        logprobs = item.pop("generation_log_probs")
        log.append({"role": "user", "token_ids": prompt[len(seen):]})
        log.append({"role": "assistant", "token_ids": generation, "generation_logprobs": logprobs})
        seen = seen + prompt[len(seen):] + generation
    if not log:
        raise ValueError("NeMo Gym returned a result with no generation data")
    return log


class NemoGymActor:
    """The parts of NeMo RL's actor that touch NeMo Gym, in the order it makes them."""

    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.rh = None

    def _spinup(self) -> None:
        initial = dict(self.cfg.get("initial_global_config_dict") or {})
        initial["policy_model_name"] = self.cfg["model_name"]
        initial["policy_api_key"] = "dummy_key"
        initial["policy_base_url"] = self.cfg["base_urls"]
        initial.setdefault("default_host", "127.0.0.1")
        initial["port_range_low"] = 10001
        initial["port_range_high"] = 20000
        initial.setdefault("global_aiohttp_connector_limit_per_host", 16_384)
        initial.setdefault("global_aiohttp_connector_limit", 65_536)
        initial["ray_head_node_address"] = "127.0.0.1:6379"
        initial[HEAD_SERVER_KEY_NAME] = {"host": "0.0.0.0", "port": 0}
        self.rh = RunHelper()
        self.rh.start(
            global_config_dict_parser_config=GlobalConfigDictParserConfig(
                dotenv_path=Path(self.cfg["checkout"]) / "nemo_gym_env.yaml",
                initial_global_config_dict=DictConfig(initial),
                skip_load_from_cli=True,
            )
        )
        self.head_server_config = BaseServerConfig(host="127.0.0.1", port=self.rh.head_server_config.port)
        self.rch = RolloutCollectionHelper()

    def health_check(self) -> None:
        self.rh.poll()

    async def run_rollouts(self, examples: list[dict]):
        for task in self.rch.run_examples(examples=examples, head_server_config=self.head_server_config):
            try:
                row, result = await task
            except Exception as error:
                typed = typed_gym_failure(error)
                if typed is not None:
                    raise typed from None
                raise
            yield row["_rowidx"], row, message_log(result)

    def shutdown(self) -> None:
        if self.rh is None:
            return
        rh, self.rh = self.rh, None
        rh.shutdown()


def server_pids(rh: RunHelper) -> dict[str, int]:
    head = rh.head_server_config
    with urllib.request.urlopen(f"http://127.0.0.1:{head.port}/server_instances", timeout=10) as r:
        return {i["process_name"]: i["pid"] for i in json.loads(r.read())}


class NemoRlFlowTest(support.WorkDirTestCase):
    def start(self, fakes: list[support.FakeEndpoint]) -> NemoGymActor:
        env, _ = support.MULTI_STEP
        actor = NemoGymActor({
            "model_name": "Qwen/Qwen3-0.6B",
            "base_urls": [f.url for f in fakes],
            "checkout": str(self.work / "nemo_rl_checkout"),
            "initial_global_config_dict": {
                "config_paths": [support.VLLM_FOR_TRAINING, support.env_config_path(env)],
            },
        })
        actor._spinup()
        self.addCleanup(actor.shutdown)
        return actor

    def fakes(self, count: int) -> list[support.FakeEndpoint]:
        table = self.work / "answers.jsonl"
        support.write_answer_table([support.MULTI_STEP[0]], table)
        out = []
        for _ in range(count):
            fake = support.FakeEndpoint("--table", str(table), served_models=("Qwen/Qwen3-0.6B",))
            self.addCleanup(fake.stop)
            out.append(fake)
        return out

    def examples(self, repeats: int) -> list[dict]:
        env, agent = support.MULTI_STEP
        rows = [support.deep(r) for r in support.dataset_rows(env, agent) for _ in range(repeats)]
        for i, row in enumerate(rows):
            row["_rowidx"] = i
        return rows

    def test_rollouts_stream_over_two_policy_urls(self) -> None:
        fakes = self.fakes(2)
        actor = self.start(fakes)
        examples = self.examples(4)

        async def collect():
            return [x async for x in actor.run_rollouts(examples)]

        loop = asyncio.new_event_loop()
        self.addCleanup(loop.close)
        got = loop.run_until_complete(collect())
        self.assertEqual(sorted(i for i, _, _ in got), list(range(len(examples))))
        for rowidx, row, log in got:
            self.assertIs(row, examples[rowidx])
            self.assertGreater(len(log), 2, "multi-turn: several trainable turns")
            self.assertTrue(all(len(m["token_ids"]) > 0 for m in log if m["role"] == "assistant"))
        calls = [len([r for r in f.received() if r["path"].endswith("/chat/completions")]) for f in fakes]
        self.assertTrue(all(c > 0 for c in calls), f"sessions spread over both policy URLs: {calls}")
        actor.health_check()

    def test_a_malformed_row_raises_with_its_status_and_the_rest_complete(self) -> None:
        actor = self.start(self.fakes(1))
        examples = self.examples(1)
        examples[2]["responses_create_params"] = "not an object"

        async def collect():
            done, failures = [], []
            gen = actor.rch.run_examples(examples=examples, head_server_config=actor.head_server_config)
            for task in gen:
                try:
                    row, result = await task
                    done.append(row["_rowidx"])
                except Exception as error:  # what NeMo RL's actor does with it
                    failures.append((error, typed_gym_failure(error)))
            return done, failures

        loop = asyncio.new_event_loop()
        self.addCleanup(loop.close)
        done, failures = loop.run_until_complete(collect())
        self.assertEqual(sorted(done), [0, 1, 3, 4])
        self.assertEqual(len(failures), 1)
        error, typed = failures[0]
        self.assertIsInstance(error.status, int)
        self.assertGreaterEqual(error.status, 400)
        self.assertTrue(error.response_content, "the body comes with the exception")
        self.assertIsNotNone(typed)
        self.assertIn(f"HTTP {error.status}", str(typed))

    def test_poll_raises_after_a_server_dies_and_shutdown_leaves_nothing(self) -> None:
        actor = self.start(self.fakes(1))
        rh = actor.rh
        gym_pid = rh._process.pid
        pids = server_pids(rh)
        everything = [gym_pid, *support.descendants(gym_pid)]
        self.assertGreaterEqual(len(everything), len(pids) + 1)
        actor.health_check()
        killed = pids["example_multi_step_resources_server"]
        os.kill(killed, signal.SIGKILL)
        self.assertEqual(support.wait_gone([killed], 10.0), [])  # SIGKILL lands asynchronously
        with self.assertRaises(RuntimeError) as caught:
            actor.health_check()
        self.assertIn("example_multi_step_resources_server", str(caught.exception))
        actor.shutdown()
        self.assertEqual(support.wait_gone(everything, 1.0), [], "nothing is left after shutdown()")
        actor.shutdown()  # idempotent
        rh.shutdown()


if __name__ == "__main__":
    unittest.main()
