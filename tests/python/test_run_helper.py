"""RunHelper's own promises: a failed start says why, secrets never reach a command line, the
deployment's config is what get_global_config_dict returns, shutdown is idempotent and also
runs at interpreter exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import support

from nemo_gym.cli import GlobalConfigDictParserConfig, RunHelper, get_global_config_dict
from nemo_gym.server_utils import HEAD_SERVER_KEY_NAME, ServerClient


def initial(fake_url: str, **extra) -> dict:
    return support.training_config([support.SINGLE_TOOL[0]], fake_url, **extra)


class RunHelperTest(support.WorkDirTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.fake = support.FakeEndpoint()
        self.addCleanup(self.fake.stop)

    def test_start_failure_raises_with_gyms_exit_status_and_output(self) -> None:
        rh = RunHelper()
        bad = initial(self.fake.url, config_paths=["resources_servers/no_such_env/configs/no_such_env.yaml"])
        with self.assertRaises(RuntimeError) as caught:
            rh.start(GlobalConfigDictParserConfig(initial_global_config_dict=bad, skip_load_from_cli=True))
        message = str(caught.exception)
        self.assertIn("exit code 1", message)
        self.assertIn("no_such_env", message, "gym's own error is in the exception")
        with self.assertRaises(RuntimeError):
            rh.poll()  # nothing runs
        rh.shutdown()

    def test_secrets_stay_off_the_command_line_and_out_of_the_config_shown(self) -> None:
        private_tmp = self.work / "tmp"
        private_tmp.mkdir()
        old_tempdir, tempfile.tempdir = tempfile.tempdir, str(private_tmp)
        self.addCleanup(setattr, tempfile, "tempdir", old_tempdir)
        rh = RunHelper()
        self.addCleanup(rh.shutdown)
        rh.start(GlobalConfigDictParserConfig(initial_global_config_dict=initial(self.fake.url, policy_api_key="sk-test-secret-123"),
                                              skip_load_from_cli=True))
        with open(f"/proc/{rh._process.pid}/cmdline", "rb") as f:
            self.assertNotIn(b"sk-test-secret-123", f.read())
        config = get_global_config_dict()
        self.assertEqual(config["policy_api_key"], "****")
        self.assertEqual(config[HEAD_SERVER_KEY_NAME]["port"], rh.head_server_config.port, "the port the OS chose")
        # The key did reach the model server: its calls carry it.
        client = ServerClient.load_from_global_config(rh.head_server_config)
        self.assertIn("policy_model", client.global_config_dict)
        self.assertEqual(os.listdir(private_tmp), [], "the private file is gone once gym has read it")
        rh.shutdown()
        rh.shutdown()
        with self.assertRaises(RuntimeError):
            rh.poll()

    def test_shutdown_runs_at_interpreter_exit(self) -> None:
        script = textwrap.dedent(f"""
            import json, urllib.request
            from nemo_gym.cli import GlobalConfigDictParserConfig, RunHelper
            rh = RunHelper()
            initial = json.loads({json.dumps(initial(self.fake.url))!r})
            rh.start(GlobalConfigDictParserConfig(initial_global_config_dict=initial, skip_load_from_cli=True))
            with urllib.request.urlopen(f"http://127.0.0.1:{{rh.head_server_config.port}}/server_instances") as r:
                pids = [i["pid"] for i in json.loads(r.read())]
            print("PIDS " + json.dumps([rh._process.pid] + pids), flush=True)
            # no shutdown(): the interpreter exits here
        """)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=self.work)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        line = next(l for l in done.stdout.splitlines() if l.startswith("PIDS "))
        pids = json.loads(line[5:])
        self.assertGreaterEqual(len(pids), 4, "gym, the resources server, the agent and the model server")
        self.assertEqual(support.wait_gone(pids, 1.0), [], "the atexit shutdown stopped everything")


if __name__ == "__main__":
    import unittest

    unittest.main()
