"""verifiers' NeMo Gym taskset (verifiers/v1/tasksets/nemo_gym/) against a gym-cpp resources
server, call by call: with `resources_url` set it POSTs the row to `/seed_session`, keeps the
session cookies, calls each tool as `POST /<tool name>` with the model's arguments, and finally
POSTs the row plus the response it built to `/verify`, reading `reward` and the verifier's other
fields. Here the response is NeMo Gym's recorded one, so the reward must be NeMo Gym's.
"""

from __future__ import annotations

import asyncio
import json
import unittest

import aiohttp
import support

from nemo_gym.server_utils import ServerClient


class VerifiersFlowTest(support.WorkDirTestCase):
    def test_seed_tools_verify_with_the_session_cookie(self) -> None:
        fake = support.FakeEndpoint()
        self.addCleanup(fake.stop)
        env, _ = support.SINGLE_TOOL
        rh = support.start_gym(self, support.training_config([env], fake.url))
        resources_url = ServerClient.load_from_global_config(rh.head_server_config).base_url(env)
        recorded = support.read_jsonl(support.conformance_file(env, "example_rollouts.jsonl"))

        async def task(rollout: dict) -> dict:
            row = {k: v for k, v in rollout.items() if k not in ("response", "reward")}
            async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:  # per rollout; IP hosts too
                seeded = await http.post(f"{resources_url}/seed_session", json=row)
                self.assertEqual(seeded.status, 200, await seeded.text())
                self.assertTrue(http.cookie_jar.filter_cookies(resources_url), "a session cookie")
                calls = [o for o in rollout["response"]["output"] if o["type"] == "function_call"]
                for call in calls:
                    tool = await http.post(f"{resources_url}/{call['name']}", json=json.loads(call["arguments"]))
                    self.assertEqual(tool.status, 200, await tool.text())
                verified = await http.post(f"{resources_url}/verify", json=row | {"response": rollout["response"]})
                self.assertEqual(verified.status, 200, await verified.text())
                return await verified.json()

        async def run_all():
            return await asyncio.gather(*(task(r) for r in recorded))

        results = asyncio.run(run_all())
        for rollout, result in zip(recorded, results):
            self.assertEqual(result["reward"], rollout["reward"])
            self.assertIn("responses_create_params", result)


if __name__ == "__main__":
    unittest.main()
