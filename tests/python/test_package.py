"""The `nemo_gym` package on its own: config inputs, server configs, errors, the binary lookup
and the wheel. No deployment is started here (test_run_helper.py and the trainer flows do)."""

from __future__ import annotations

import os
import pickle
import stat
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

import support  # noqa: F401  (sets GYM_BINARY)
from omegaconf import DictConfig

import nemo_gym
from nemo_gym._gym_binary import find_gym_binary
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.global_config import (
    GlobalConfigDictParserConfig,
    compute_global_config_dict,
    get_first_server_config_dict,
    to_plain,
)
from nemo_gym.rollout_collection import agent_name_of
from nemo_gym.server_utils import (
    HEAD_SERVER_KEY_NAME,
    GlobalAIOHTTPAsyncClientConfig,
    RequestFailedError,
    ServerClient,
)


class ParserConfigTest(unittest.TestCase):
    def setUp(self) -> None:
        self._cwd = os.getcwd()
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self._tmp.name)

    def tearDown(self) -> None:
        os.chdir(self._cwd)
        self._tmp.cleanup()

    def test_initial_dict_goes_to_a_private_file_not_the_command_line(self) -> None:
        initial = DictConfig({"policy_api_key": "sk-not-for-ps", "policy_base_url": ["http://a/v1", "http://b/v1"],
                              "x": {"y": "${policy_base_url}"}})
        args = GlobalConfigDictParserConfig(initial_global_config_dict=initial, skip_load_from_cli=True).gym_arguments(self.dir)
        self.assertEqual(args[0], "--initial-config")
        self.assertNotIn("sk-not-for-ps", " ".join(args))
        path = Path(args[1])
        self.assertEqual(stat.S_IMODE(path.stat().st_mode), 0o600)
        import yaml

        written = yaml.safe_load(path.read_text())
        self.assertEqual(written["policy_api_key"], "sk-not-for-ps")
        self.assertEqual(written["policy_base_url"], ["http://a/v1", "http://b/v1"])
        self.assertEqual(written["x"]["y"], "${policy_base_url}", "interpolations are gym's to resolve")

    def test_dotenv_path_as_nemo_gym_reads_it(self) -> None:
        missing = self.dir / "nemo_gym_env.yaml"
        args = GlobalConfigDictParserConfig(dotenv_path=missing, skip_load_from_cli=True).gym_arguments(self.dir)
        self.assertEqual(args, ["--no-env-file"], "a dotenv path that does not exist means no env.yaml")
        missing.write_text("policy_model_name: m\n")
        args = GlobalConfigDictParserConfig(dotenv_path=missing, skip_load_from_cli=True).gym_arguments(self.dir)
        self.assertEqual(args, ["--env-file", str(missing)])
        args = GlobalConfigDictParserConfig(dotenv_path=missing, skip_load_from_dotenv=True, skip_load_from_cli=True).gym_arguments(self.dir)
        self.assertEqual(args, ["--no-env-file"])

    def test_command_line_overrides_unless_skipped(self) -> None:
        old = sys.argv
        sys.argv = ["train.py", "++policy_model_name=from-argv"]
        try:
            self.assertEqual(GlobalConfigDictParserConfig().gym_arguments(self.dir), ["++policy_model_name=from-argv"])
            self.assertEqual(GlobalConfigDictParserConfig(skip_load_from_cli=True).gym_arguments(self.dir), [])
        finally:
            sys.argv = old

    def test_bad_initial_dict_is_a_type_error(self) -> None:
        with self.assertRaises(TypeError):
            GlobalConfigDictParserConfig(initial_global_config_dict=["config_paths"])

    def test_config_computed_by_gym_with_masked_secrets(self) -> None:
        initial = {
            "config_paths": [support.env_config_path("example_multi_step"), support.VLLM_FOR_TRAINING],
            "policy_base_url": "http://127.0.0.1:9/v1",
            "policy_api_key": "sk-hidden",
            "policy_model_name": "m",
        }
        os.chdir(self.dir)
        config = compute_global_config_dict(GlobalConfigDictParserConfig(initial_global_config_dict=initial, skip_load_from_cli=True))
        model = get_first_server_config_dict(config, "policy_model")
        self.assertTrue(model["return_token_id_information"], "vllm_model_for_training resolved to the bundled preset")
        self.assertEqual(model["base_url"], "http://127.0.0.1:9/v1")
        self.assertEqual(config["policy_api_key"], "****")
        self.assertIn("example_multi_step_simple_agent", config)

    def test_config_errors_carry_gyms_message(self) -> None:
        os.chdir(self.dir)
        initial = {"config_paths": ["resources_servers/no_such_env/configs/no_such_env.yaml"]}
        with self.assertRaises(RuntimeError) as caught:
            compute_global_config_dict(GlobalConfigDictParserConfig(initial_global_config_dict=initial, skip_load_from_cli=True))
        self.assertIn("no_such_env", str(caught.exception))


class ServerConfigTest(unittest.TestCase):
    def test_base_server_config(self) -> None:
        c = BaseServerConfig(host="10.0.0.1", port=11000)
        self.assertEqual(c.model_dump(), {"host": "10.0.0.1", "port": 11000})
        self.assertEqual(BaseServerConfig.model_validate({"host": "h", "port": 5}), BaseServerConfig(host="h", port=5))
        for bad in ({"host": "h", "port": 0}, {"host": "", "port": 5}, {"host": "h", "port": "x"}, {"host": "h"}):
            with self.assertRaises(ValueError, msg=bad):
                BaseServerConfig.model_validate(bad)

    def test_server_client_finds_instances_by_name(self) -> None:
        config = DictConfig({
            HEAD_SERVER_KEY_NAME: {"host": "127.0.0.1", "port": 11000},
            "my_agent": {"responses_api_agents": {"simple_agent": {"host": "0.0.0.0", "port": 12345}}},
        })
        client = ServerClient(head_server_config=BaseServerConfig(host="127.0.0.1", port=11000), global_config_dict=config)
        self.assertEqual(client.base_url("my_agent"), "http://127.0.0.1:12345")
        with self.assertRaises(ValueError) as caught:
            client.base_url("my_agnet")
        self.assertIn("my_agent", str(caught.exception), "the error lists the instances")
        # verifiers builds one with an empty config and talks to a resources server URL itself.
        ServerClient(head_server_config=BaseServerConfig(host="127.0.0.1", port=11000), global_config_dict=DictConfig({}))

    def test_connection_limits_from_config(self) -> None:
        cfg = GlobalAIOHTTPAsyncClientConfig.model_validate(DictConfig({"global_aiohttp_connector_limit": 65536, "global_aiohttp_connector_limit_per_host": 16384}))
        self.assertEqual((cfg.global_aiohttp_connector_limit, cfg.global_aiohttp_connector_limit_per_host), (65536, 16384))
        default = GlobalAIOHTTPAsyncClientConfig.model_validate({})
        self.assertEqual((default.global_aiohttp_connector_limit, default.global_aiohttp_connector_limit_per_host), (102400, 1024))
        with self.assertRaises(ValueError):
            GlobalAIOHTTPAsyncClientConfig.model_validate({"global_aiohttp_connector_limit": -1})

    def test_agent_name_of_a_row(self) -> None:
        self.assertEqual(agent_name_of({"agent_ref": {"name": "a"}}), "a")
        for row in ({}, {"agent_ref": "a"}, {"agent_ref": {"type": "responses_api_agents"}}):
            with self.assertRaises(ValueError):
                agent_name_of(row)

    def test_request_failure_keeps_status_and_body_and_pickles(self) -> None:
        import aiohttp

        e = RequestFailedError(422, "Unprocessable Entity: {\"detail\": \"bad\"}", "http://x/run", b'{"detail": "bad"}')
        self.assertIsInstance(e, aiohttp.ClientResponseError)
        back = pickle.loads(pickle.dumps(e))
        self.assertEqual((back.status, back.response_content, back.url), (422, b'{"detail": "bad"}', "http://x/run"))
        self.assertIn("bad", str(back))

    def test_to_plain(self) -> None:
        self.assertEqual(to_plain(DictConfig({"a": [1, {"b": Path("/x")}]})), {"a": [1, {"b": "/x"}]})


class BinaryAndWheelTest(unittest.TestCase):
    def test_gym_binary_env_wins_and_a_bad_one_is_named(self) -> None:
        self.assertEqual(find_gym_binary(), os.environ["GYM_BINARY"])
        old = os.environ["GYM_BINARY"]
        os.environ["GYM_BINARY"] = "/nonexistent/gym"
        try:
            with self.assertRaises(FileNotFoundError) as caught:
                find_gym_binary()
            self.assertIn("/nonexistent/gym", str(caught.exception))
        finally:
            os.environ["GYM_BINARY"] = old

    def test_version_matches_the_project(self) -> None:
        cmake = (support.SOURCE_ROOT / "CMakeLists.txt").read_text()
        self.assertIn(f"project(gym_cpp VERSION {nemo_gym.__version__.split('gymcpp.')[1]} ", cmake)

    def test_wheel_with_the_binary_installs_and_finds_it(self) -> None:
        """`make wheel`'s build: the wheel carries gym, pip keeps it executable, and the package
        finds it with neither GYM_BINARY nor gym on PATH."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            env = dict(os.environ, GYM_WHEEL_BINARY=os.environ["GYM_BINARY"])
            build = subprocess.run(
                [sys.executable, "-c", "import sys; sys.path.insert(0, 'build_backend'); import gym_wheel; "
                 f"print(gym_wheel.build_wheel({str(tmp)!r}))"],
                cwd=support.SOURCE_ROOT / "python", env=env, capture_output=True, text=True)
            self.assertEqual(build.returncode, 0, build.stderr)
            wheel = tmp / build.stdout.strip()
            self.assertNotIn("-any.whl", wheel.name, "a wheel with a binary is platform-specific")
            with zipfile.ZipFile(wheel) as z:
                info = z.getinfo("nemo_gym/_bin/gym")
                self.assertTrue((info.external_attr >> 16) & 0o111)
                self.assertIn("nemo_gym/rollout_collection.py", z.namelist())
            subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(tmp / "venv")], check=True)
            pip = subprocess.run([str(tmp / "venv/bin/pip"), "install", "--no-index", "--quiet", str(wheel)], capture_output=True, text=True)
            self.assertEqual(pip.returncode, 0, pip.stderr)
            clean = {k: v for k, v in os.environ.items() if k != "GYM_BINARY"}
            clean["PATH"] = "/usr/bin:/bin"
            found = subprocess.run(
                [str(tmp / "venv/bin/python"), "-c", "from nemo_gym._gym_binary import find_gym_binary as f; import subprocess; b=f(); print(b); print(subprocess.run([b,'--version'],capture_output=True,text=True).stdout)"],
                cwd=tmp, env=clean, capture_output=True, text=True)
            self.assertEqual(found.returncode, 0, found.stderr)
            self.assertIn("nemo_gym/_bin/gym", found.stdout)
            self.assertIn("gym-cpp", found.stdout)


if __name__ == "__main__":
    unittest.main()
