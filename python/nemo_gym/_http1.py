"""A lean HTTP/1.1 client for the rollout hot path: `POST <agent>/run` with a JSON body.

aiohttp spends ~700 µs of CPU per exchange on a small machine, more than the servers spend on a
whole rollout; this client, on asyncio streams with keep-alive connections, spends about a
third of that (bench/RESULTS.md, "Rollouts from Python"). It keeps aiohttp's contract where a
trainer sees it: connections are bounded by `global_aiohttp_connector_limit` (in all) and
`global_aiohttp_connector_limit_per_host` (0: no bound), a failed connection is tried again
MAX_NUM_TRIES times and then raised as aiohttp.ClientConnectionError, and the caller turns a
status outside 2xx into server_utils.RequestFailedError (an aiohttp.ClientResponseError).
"""

from __future__ import annotations

import asyncio
import collections
from typing import Optional

import aiohttp

_STREAM_LIMIT = 1 << 20  # longest header block accepted
_MAX_BODY = 1 << 31  # a Content-Length beyond this is a broken answer, not a rollout


class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:
            pass


class Http1Pool:
    """Keep-alive connections of one event loop, bounded in all and per host."""

    def __init__(self, limit: int, limit_per_host: int):
        self.limit = limit
        self.limit_per_host = limit_per_host
        self._idle: dict[tuple[str, int], list[_Connection]] = collections.defaultdict(list)
        self._open: dict[tuple[str, int], int] = collections.defaultdict(int)
        self._total = 0
        self._waiters: collections.deque[tuple[tuple[str, int], asyncio.Future]] = collections.deque()
        self.most_open_per_host = 0  # the largest number of connections one host had at once

    def _may_open(self, key: tuple[str, int]) -> bool:
        return (self.limit == 0 or self._total < self.limit) and (
            self.limit_per_host == 0 or self._open[key] < self.limit_per_host
        )

    async def _acquire(self, key: tuple[str, int]) -> Optional[_Connection]:
        """An idle connection to `key`, or None when the caller may open a new one."""
        while True:
            idle = self._idle[key]
            while idle:
                conn = idle.pop()
                if not conn.reader.at_eof() and not conn.writer.is_closing():
                    return conn
                self._closed(key, conn)
            if self._may_open(key):
                self._open[key] += 1
                self._total += 1
                self.most_open_per_host = max(self.most_open_per_host, self._open[key])
                return None
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append((key, waiter))
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # pass the turn on
                raise

    def _wake(self) -> None:
        """Lets the first waiter that can now proceed try again."""
        for i, (key, waiter) in enumerate(self._waiters):
            if waiter.done():
                continue
            if self._idle[key] or self._may_open(key):
                del self._waiters[i]
                waiter.set_result(None)
                return

    def _closed(self, key: tuple[str, int], conn: Optional[_Connection]) -> None:
        if conn is not None:
            conn.close()
        self._open[key] -= 1
        self._total -= 1

    def _release(self, key: tuple[str, int], conn: _Connection, reusable: bool) -> None:
        if reusable:
            self._idle[key].append(conn)
        else:
            self._closed(key, conn)
        if self._waiters:
            self._wake()

    async def post(self, host: str, port: int, path: str, body: bytes, tries: int,
                   retry_sleep: float) -> tuple[int, str, bytes]:
        """POSTs a JSON body; (status, reason, response body). A connection that fails before
        the answer begins is tried again (an idle one the server closed: at once; a new one:
        `tries` times in all, `retry_sleep` apart), then aiohttp.ClientConnectionError."""
        key = (host, port)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        failures = 0
        while True:
            conn = await self._acquire(key)
            fresh = conn is None
            if fresh:
                try:
                    conn = _Connection(*await asyncio.open_connection(host, port, limit=_STREAM_LIMIT))
                except OSError as e:
                    self._closed(key, None)
                    self._wake()
                    failures += 1
                    if failures >= tries:
                        raise aiohttp.ClientConnectionError(
                            f"POST http://{host}:{port}{path} failed {tries} times: {type(e).__name__}: {e}"
                        ) from e
                    print(f"POST http://{host}:{port}{path}: {e}; trying again in {retry_sleep}s", flush=True)
                    await asyncio.sleep(retry_sleep)
                    continue
            try:
                conn.writer.write(head + body)
                status, reason, content, reusable = await _read_answer(conn.reader)
            except _NoAnswer as e:
                self._closed(key, conn)
                self._wake()
                if not fresh:
                    continue  # the server closed an idle connection: a new one, not a try
                failures += 1
                if failures >= tries:
                    raise aiohttp.ClientConnectionError(
                        f"POST http://{host}:{port}{path}: the connection closed before an answer "
                        f"({tries} tries): {e}"
                    ) from e
                await asyncio.sleep(retry_sleep)
                continue
            except BaseException:
                self._closed(key, conn)
                self._wake()
                raise
            self._release(key, conn, reusable)
            return status, reason, content

    def close(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()


class _NoAnswer(Exception):
    """The connection ended before the first byte of an answer."""


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, str, bytes, bool]:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            raise _NoAnswer("closed") from e
        raise aiohttp.ClientPayloadError(f"the answer ended inside its header: {e.partial[:200]!r}") from e
    except (ConnectionResetError, BrokenPipeError) as e:
        raise _NoAnswer(str(e)) from e
    except asyncio.LimitOverrunError as e:
        raise aiohttp.ClientPayloadError("the answer's header block is over 1 MiB") from e
    lines = head[:-4].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise aiohttp.ClientPayloadError(f"not an HTTP/1.x status line: {lines[0][:200]!r}")
    status = int(parts[1])
    reason = parts[2] if len(parts) > 2 else ""
    length: Optional[int] = None
    chunked = False
    keep_alive = parts[0] == "HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value.strip())
        elif name == "transfer-encoding":
            chunked = "chunked" in value.lower()
        elif name == "connection":
            keep_alive = "close" not in value.lower() if keep_alive else "keep-alive" in value.lower()
    try:
        if chunked:
            body = bytearray()
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
                if size == 0:
                    await _skip_trailers(reader)
                    break
                body += await reader.readexactly(size)
                await reader.readexactly(2)
            return status, reason, bytes(body), keep_alive
        if length is not None:
            if length > _MAX_BODY:
                raise aiohttp.ClientPayloadError(f"Content-Length {length} is too large")
            return status, reason, await reader.readexactly(length), keep_alive
        if status in (204, 304) or 100 <= status < 200:
            return status, reason, b"", keep_alive
        return status, reason, await reader.read(), False  # the body ends with the connection
    except asyncio.IncompleteReadError as e:
        raise aiohttp.ClientPayloadError(f"the answer's body ended early ({len(e.partial)} bytes)") from e


async def _skip_trailers(reader: asyncio.StreamReader) -> None:
    while (await reader.readuntil(b"\r\n")) != b"\r\n":
        pass
