"""TRL's NeMo Gym GRPO example, call by call, over gym-cpp.

The example (examples/scripts/nemo_gym/ in huggingface/trl) starts NeMo Gym with `RunHelper`
from a config of `config_paths` and `policy_*` keys, makes one `RolloutCollectionHelper` and one
event loop, and in every training step runs `run_examples` on that loop, puts the results back
in `_rowidx` order and turns each rollout's output items into prompt ids, completion ids, a
mask and logprobs, asserting that every turn's prompt ids extend what came before. Here the
model is the fake vLLM endpoint answering NeMo Gym's recorded turns with a consistent
tokenisation; two environments (multi-step and single tool call) run side by side.
"""

from __future__ import annotations

import asyncio
import json
import unittest

import support
from omegaconf import DictConfig

from nemo_gym.cli import GlobalConfigDictParserConfig, RunHelper
from nemo_gym.rollout_collection import RolloutCollectionHelper
from nemo_gym.server_utils import HEAD_SERVER_KEY_NAME, BaseServerConfig

ENVS = [support.MULTI_STEP, support.SINGLE_TOOL]
NUM_GENERATIONS = 2


def launch_nemo_gym(config_paths: list[str], model_name: str, vllm_url: str, host: str, port: int) -> RunHelper:
    """What TRL's launch_nemo_gym passes (with the head port the test asks the OS for)."""
    initial_global_config_dict = {
        HEAD_SERVER_KEY_NAME: {"host": host, "port": port},
        "config_paths": config_paths,
        "policy_base_url": vllm_url,
        "policy_api_key": "EMPTY",
        "policy_model_name": model_name,
        "global_aiohttp_connector_limit_per_host": 16_384,
        "global_aiohttp_connector_limit": 65_536,
    }
    rh = RunHelper()
    rh.start(
        global_config_dict_parser_config=GlobalConfigDictParserConfig(
            initial_global_config_dict=DictConfig(initial_global_config_dict),
            skip_load_from_cli=True,
        )
    )
    return rh


async def collect_rollouts(examples, rch, head_server_config):
    """TRL's _collect_rollouts, recording what the test checks on the side."""
    rowidxs, results, rows = [], [], []
    for task in rch.run_examples(examples=examples, head_server_config=head_server_config):
        row, result = await task
        rows.append(row)
        rowidxs.append(row["_rowidx"])
        results.append(result)
    ordered = [None] * len(examples)
    for rowidx, result in zip(rowidxs, results):
        ordered[rowidx] = result
    return ordered, rowidxs, rows


def to_training_sample(response: dict) -> dict:
    """TRL's conversion of one rollout into prompt / completion / mask / logprobs, with its
    contiguity assertion."""
    seen: list[int] = []
    first_prompt = None
    ids, mask, logprobs, turns = [], [], [], 0
    for item in response.get("response", {}).get("output", []):
        if "generation_token_ids" not in item:
            continue
        turns += 1
        prompt_ids = [int(t) for t in item["prompt_token_ids"]]
        gen_ids = [int(t) for t in item["generation_token_ids"]]
        item_logprobs = item.get("generation_log_probs", [])
        if first_prompt is None:
            first_prompt = prompt_ids
            seen = list(prompt_ids)
        else:
            assert seen == prompt_ids[: len(seen)], "Non-contiguous messages found!"
            tool_tokens = prompt_ids[len(seen):]
            ids += tool_tokens
            mask += [0] * len(tool_tokens)
            logprobs += [0.0] * len(tool_tokens)
        ids += gen_ids
        mask += [1] * len(gen_ids)
        assert len(item_logprobs) == len(gen_ids), "Logprobs len != gen len"
        logprobs += item_logprobs
        seen = prompt_ids + gen_ids
    if not ids or first_prompt is None:
        raise ValueError("Rollout has no valid turns")
    return {"prompt_ids": first_prompt, "completion_ids": ids, "env_mask": mask, "logprobs": logprobs,
            "env_reward": response.get("reward", 0.0), "num_turns": turns}


def conversation_key(row: dict) -> str:
    """A task's messages (the recorded rollouts spell the same input with extra item fields)."""
    return json.dumps([(m.get("role"), m.get("content")) for m in row["responses_create_params"]["input"]])


class TrlFlowTest(support.WorkDirTestCase):
    def test_two_training_steps_on_one_loop(self) -> None:
        table = self.work / "answers.jsonl"
        self.assertGreater(support.write_answer_table([e for e, _ in ENVS], table), 0)
        fake = support.FakeEndpoint("--table", str(table), served_models=("Qwen/Qwen3-0.6B",))
        self.addCleanup(fake.stop)
        config_paths = [support.env_config_path(e) for e, _ in ENVS] + [support.VLLM_FOR_TRAINING]
        rh = launch_nemo_gym(config_paths, "Qwen/Qwen3-0.6B", fake.url, host="0.0.0.0", port=0)
        self.addCleanup(rh.shutdown)

        head_server_config = BaseServerConfig(host="127.0.0.1", port=rh.head_server_config.port)
        rch = RolloutCollectionHelper()
        loop = asyncio.new_event_loop()
        self.addCleanup(loop.close)

        recorded = {}
        prompts = []
        for env, agent in ENVS:
            rows = support.dataset_rows(env, agent)
            for rollout in support.read_jsonl(support.conformance_file(env, "example_rollouts.jsonl")):
                recorded[conversation_key(rollout)] = rollout["reward"]
            prompts += [json.dumps(row) for row in rows for _ in range(NUM_GENERATIONS)]

        for step in range(2):
            dataset_items = [json.loads(p) for p in prompts]
            for rowidx, item in enumerate(dataset_items):
                item["_rowidx"] = rowidx
                params = item.get("responses_create_params", {})
                params["temperature"] = 1.0
                params["top_p"] = 0.999
                params["max_output_tokens"] = 2048
                item["responses_create_params"] = params

            responses, rowidxs, rows = loop.run_until_complete(collect_rollouts(dataset_items, rch, head_server_config))

            self.assertEqual(sorted(rowidxs), list(range(len(dataset_items))), f"step {step}: every _rowidx once")
            for row in rows:
                self.assertIs(row, dataset_items[row["_rowidx"]], "the caller's own row object comes back")
            multi_turn = 0
            for rowidx, response in enumerate(responses):
                self.assertIsInstance(response, dict)
                sample = to_training_sample(response)
                self.assertEqual(len(sample["completion_ids"]), len(sample["env_mask"]))
                self.assertEqual(len(sample["completion_ids"]), len(sample["logprobs"]))
                self.assertTrue(all(lp <= 0 for lp in sample["logprobs"]))
                multi_turn += sample["num_turns"] > 1
                self.assertEqual(response["reward"], recorded[conversation_key(dataset_items[rowidx])],
                                 f"step {step} row {rowidx}: NeMo Gym's recorded reward")
            self.assertGreater(multi_turn, 0, "some rollouts are multi-turn tool calling")

        rh.poll()  # still healthy after both steps

    def test_reasoning_dropped_from_history_breaks_contiguity(self) -> None:
        """A model that reasons, under a chat template that drops earlier turns' reasoning: the
        second turn's prompt no longer starts with the first turn's tokens. With the default
        (warn) the rows come back and the trainer's own check trips; with
        on_token_contiguity_break: fail the rows fail with status 500 and never reach training."""
        table = self.work / "answers.jsonl"
        support.write_answer_table([support.MULTI_STEP[0]], table, reasoning="Let me look that up.")
        fake = support.FakeEndpoint("--table", str(table), served_models=("Qwen/Qwen3-0.6B",))
        self.addCleanup(fake.stop)
        env, agent = support.MULTI_STEP
        rows = support.dataset_rows(env, agent)
        for i, row in enumerate(rows):
            row["_rowidx"] = i
        loop = asyncio.new_event_loop()
        self.addCleanup(loop.close)

        for action in ("warn", "fail"):
            initial = {
                HEAD_SERVER_KEY_NAME: {"host": "127.0.0.1", "port": 0},
                "config_paths": [support.env_config_path(env), support.VLLM_FOR_TRAINING],
                "policy_base_url": fake.url,
                "policy_model_name": "Qwen/Qwen3-0.6B",
                "policy_model": {"responses_api_models": {"vllm_model": {"on_token_contiguity_break": action}}},
            }
            rh = RunHelper()
            rh.start(GlobalConfigDictParserConfig(initial_global_config_dict=DictConfig(initial), skip_load_from_cli=True))
            head = BaseServerConfig(host="127.0.0.1", port=rh.head_server_config.port)

            async def run_all():
                out = []
                for task in RolloutCollectionHelper().run_examples(examples=support.deep(rows), head_server_config=head):
                    try:
                        out.append(await task)
                    except Exception as error:
                        out.append(error)
                return out

            outcomes = loop.run_until_complete(run_all())
            rh.shutdown()
            self.assertEqual(len(outcomes), len(rows))
            if action == "warn":
                for outcome in outcomes:
                    self.assertIsInstance(outcome, tuple, outcome)
                    with self.assertRaises(AssertionError, msg="TRL's contiguity assertion trips"):
                        to_training_sample(outcome[1])
            else:
                for outcome in outcomes:
                    self.assertIsInstance(outcome, Exception)
                    self.assertEqual(outcome.status, 500)
                    self.assertIn(b"on-policy check", outcome.response_content)


if __name__ == "__main__":
    unittest.main()
