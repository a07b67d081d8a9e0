"""Rollouts from Python: each row posted to its agent's `/run`, results as they complete."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Awaitable, Optional

from nemo_gym.config_types import BaseServerConfig
from nemo_gym.global_config import AGENT_REF_KEY_NAME
from nemo_gym.server_utils import ServerClient, setup_server_client


_RUNNING: set[asyncio.Task] = set()  # tasks of run_examples with a semaphore, until done


def agent_name_of(row: Any) -> str:
    """The agent instance a row is for: `row["agent_ref"]["name"]`."""
    ref = row.get(AGENT_REF_KEY_NAME) if isinstance(row, Mapping) else None
    name = ref.get("name") if isinstance(ref, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ValueError(
            f'a row needs agent_ref: {{"name": "<agent instance>"}} to say which agent runs it; got '
            f"agent_ref={ref!r}"
        )
    return name


class RolloutCollectionHelper:
    """Runs rows against a running deployment (`RunHelper.start`, or `gym env start`)."""

    def run_examples(
        self,
        examples: Iterable[dict],
        head_server_config: Optional[BaseServerConfig] = None,
        semaphore: Optional[asyncio.Semaphore] = None,
    ) -> Iterator[Awaitable[tuple[dict, dict]]]:
        """One awaitable per row, in completion order: each gives `(row, result)`, where `row`
        is the caller's own object and `result` the agent's `/run` answer (reward, response
        with its token ids, ...). An answer outside 2xx raises `server_utils.RequestFailedError`
        (an aiohttp.ClientResponseError: `.status` int, `.response_content` the body), a server
        that cannot be reached aiohttp.ClientConnectionError; a row
        without `agent_ref.name`, or naming no agent of the deployment, raises ValueError. The
        rows start at once; `semaphore` bounds how many are in flight (the connection limits
        of the config bound the connections otherwise). The POSTs go through the lean HTTP/1.1
        client of nemo_gym/_http1.py, which keeps those limits."""
        server_client = self.setup_server_client(head_server_config)

        async def run_one(row: dict) -> tuple[dict, dict]:
            return row, await server_client.post_for_json(agent_name_of(row), "/run", row)

        if semaphore is None:
            return asyncio.as_completed([run_one(row) for row in examples])
        # One feeder takes the semaphore for row after row, so it never has more than one
        # waiter: asyncio.Semaphore scans all its waiters on every acquire (Python 3.11), and a
        # waiter per row made that quadratic in the batch.
        loop = asyncio.get_event_loop()
        rows = list(examples)
        results = [loop.create_future() for _ in rows]

        def finish(result: asyncio.Future, task: asyncio.Task) -> None:
            semaphore.release()
            if result.done():
                return
            if task.cancelled():
                result.cancel()
            elif task.exception() is not None:
                result.set_exception(task.exception())
            else:
                result.set_result(task.result())

        def keep(task: asyncio.Task) -> asyncio.Task:
            _RUNNING.add(task)  # the loop holds tasks weakly: one nobody references may vanish
            task.add_done_callback(_RUNNING.discard)
            return task

        async def feed() -> None:
            for row, result in zip(rows, results):
                await semaphore.acquire()
                keep(loop.create_task(run_one(row))).add_done_callback(functools.partial(finish, result))

        keep(loop.create_task(feed()))
        return asyncio.as_completed(results)

    def setup_server_client(self, head_server_config: Optional[BaseServerConfig] = None) -> ServerClient:
        return setup_server_client(head_server_config)
