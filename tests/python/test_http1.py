"""The lean HTTP/1.1 client of run_examples (nemo_gym/_http1.py): connection limits against a
real gym deployment, and the answers a server may give that gym-cpp's never do (chunked bodies,
connections closed after an answer or before one, a server that is gone), against a small
asyncio server written here."""

from __future__ import annotations

import asyncio
import json
import unittest

import aiohttp
import support

from nemo_gym._http1 import Http1Pool
from nemo_gym.cli import RunHelper
from nemo_gym.rollout_collection import RolloutCollectionHelper
from nemo_gym.server_utils import RequestFailedError, global_aiohttp_client_exit, run_pool


class ScriptedServer:
    """Answers each request with the next of `answers` (raw bytes; None: close without one)."""

    def __init__(self, answers: list):
        self.answers = list(answers)
        self.connections = 0

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader, writer):
        self.connections += 1
        try:
            while self.answers:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length"))
                await reader.readexactly(length)
                answer = self.answers.pop(0)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                if b"Connection: close" in answer:
                    break
        except asyncio.IncompleteReadError:
            pass
        writer.close()


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n" % (len(body), extra) + body


class Http1Test(unittest.TestCase):
    def run_async(self, coro):
        return asyncio.run(coro)

    def test_answers_chunked_closed_and_refused(self) -> None:
        async def scenario():
            server = ScriptedServer([
                ok(b'{"a": 1}'),
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"b\"\r\n4\r\n: 2}\r\n0\r\n\r\n",
                ok(b'{"c": 3}', b"Connection: close\r\n"),
                ok(b'{"d": 4}'),
                None,  # drops the kept-alive connection of {"d": 4}: the client opens another
                b"HTTP/1.1 422 Unprocessable Entity\r\nContent-Length: 12\r\n\r\n{\"detail\":1}",
                None, None, None,  # three new connections closed before an answer
            ])
            port = await server.start()
            pool = Http1Pool(0, 0)
            got = [await pool.post("127.0.0.1", port, "/run", b"{}", 3, 0.01) for _ in range(5)]
            with self.assertRaises(aiohttp.ClientConnectionError) as closed:
                await pool.post("127.0.0.1", port, "/run", b"{}", 3, 0.01)
            server.server.close()
            await server.server.wait_closed()
            with self.assertRaises(aiohttp.ClientConnectionError) as refused:
                await pool.post("127.0.0.1", port, "/run", b"{}", 2, 0.01)
            pool.close()
            return got, server.connections, str(closed.exception), str(refused.exception)

        got, connections, closed, refused = self.run_async(scenario())
        self.assertEqual([json.loads(b) for _, _, b in got[:4]], [{"a": 1}, {"b": 2}, {"c": 3}, {"d": 4}])
        self.assertEqual(got[4][0], 422)
        self.assertEqual(json.loads(got[4][2]), {"detail": 1})
        self.assertEqual(connections, 6, "after Connection: close, after the drop, and one per try")
        self.assertIn("closed before an answer (3 tries)", closed)
        self.assertIn("failed 2 times", refused)


class PoolLimitTest(support.WorkDirTestCase):
    def start(self, per_host: int) -> RunHelper:
        # The limits are read once per process, from the first deployment (as in NeMo Gym).
        global_aiohttp_client_exit()
        self.addCleanup(global_aiohttp_client_exit)
        fake = support.FakeEndpoint()
        self.addCleanup(fake.stop)
        rh = support.start_gym(self, support.training_config(
            [support.SINGLE_TOOL[0]], fake.url, global_aiohttp_connector_limit_per_host=per_host))
        return rh

    def rows(self) -> list[dict]:
        env, agent = support.SINGLE_TOOL
        rows = [support.deep(r) for r in support.dataset_rows(env, agent) for _ in range(8)]
        rows.insert(17, {"agent_ref": {"name": agent}, "responses_create_params": "not an object"})
        return rows

    def test_a_semaphore_bounds_the_rows_in_flight(self) -> None:
        rh = self.start(per_host=1000)
        rows = self.rows()

        async def collect():
            done, failed = [], []
            for task in RolloutCollectionHelper().run_examples(rows, head_server_config=rh.head_server_config,
                                                               semaphore=asyncio.Semaphore(2)):
                try:
                    row, _ = await task
                    done.append(row)
                except RequestFailedError as e:
                    failed.append(e.status)
            return done, failed, run_pool().most_open_per_host

        done, failed, most = asyncio.run(collect())
        self.assertEqual(len(done), len(rows) - 1)
        self.assertTrue(all(any(d is r for r in rows) for d in done), "the caller's rows come back")
        self.assertEqual(len(failed), 1)
        self.assertLessEqual(most, 2, "two rows in flight need two connections at most")

    def test_connections_per_host_follow_the_config(self) -> None:
        rh = self.start(per_host=3)
        rows = self.rows()

        async def collect():
            done, failed = 0, []
            for task in RolloutCollectionHelper().run_examples(rows, head_server_config=rh.head_server_config):
                try:
                    await task
                    done += 1
                except RequestFailedError as e:
                    failed.append(e.status)
            return done, failed, run_pool().most_open_per_host

        done, failed, most = asyncio.run(collect())
        self.assertEqual(done, len(rows) - 1)
        self.assertEqual(len(failed), 1)
        self.assertGreaterEqual(failed[0], 400)
        self.assertLessEqual(most, 3, "global_aiohttp_connector_limit_per_host bounds the connections")
        self.assertGreater(most, 0)


if __name__ == "__main__":
    unittest.main()
