"""Talking to the servers of a running deployment: NeMo Gym's `ServerClient` and its helpers.

Servers are found by instance name through the deployment's global config, which the head
server serves at `/global_config_dict_yaml`. Requests go through one aiohttp client per event
loop, sized by `global_aiohttp_connector_limit` and `global_aiohttp_connector_limit_per_host`
(NeMo Gym's keys and defaults), with cookies ignored: every rollout is its own session.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import urllib.error
import urllib.request
import weakref
from collections.abc import Mapping
from typing import Any, Literal, Optional, Union

import aiohttp
import yaml
import yarl

from nemo_gym._http1 import Http1Pool
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.global_config import (
    DEFAULT_HEAD_SERVER_PORT,
    HEAD_SERVER_KEY_NAME,
    as_config,
    get_first_server_config_dict,
    get_global_config_dict,
    to_plain,
)

__all__ = [
    "BaseServerConfig",
    "DEFAULT_HEAD_SERVER_PORT",
    "GlobalAIOHTTPAsyncClientConfig",
    "HEAD_SERVER_KEY_NAME",
    "MAX_NUM_TRIES",
    "RequestFailedError",
    "SESSION_ID_KEY",
    "ServerClient",
    "get_global_aiohttp_client",
    "get_response_json",
    "get_server_url",
    "global_aiohttp_client_exit",
    "is_global_aiohttp_client_setup",
    "raise_for_status",
    "request",
    "set_global_aiohttp_client",
    "setup_server_client",
]

SESSION_ID_KEY = "session_id"
# Tries of a request whose connection failed (refused, reset, closed before the answer).
MAX_NUM_TRIES = 3
_RETRY_SLEEP_SECONDS = 0.5
# How much of a failed answer's body goes into the exception's message.
_BODY_IN_MESSAGE = 2000

ServerStatus = Union[
    Literal["success"], Literal["connection_error"], Literal["timeout"], Literal["unknown_error"]
]


class GlobalAIOHTTPAsyncClientConfig:
    """The connection limits of the shared client (NeMo Gym's keys and defaults)."""

    def __init__(
        self,
        global_aiohttp_connector_limit: int = 100 * 1024,
        global_aiohttp_connector_limit_per_host: int = 1024,
        global_aiohttp_client_request_debug: bool = False,
        **_: Any,
    ):
        for name, value in (
            ("global_aiohttp_connector_limit", global_aiohttp_connector_limit),
            ("global_aiohttp_connector_limit_per_host", global_aiohttp_connector_limit_per_host),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer (0: no limit), got {value!r}")
        self.global_aiohttp_connector_limit = global_aiohttp_connector_limit
        self.global_aiohttp_connector_limit_per_host = global_aiohttp_connector_limit_per_host
        self.global_aiohttp_client_request_debug = bool(global_aiohttp_client_request_debug)

    @classmethod
    def model_validate(cls, config: Any) -> "GlobalAIOHTTPAsyncClientConfig":
        plain = to_plain(config) or {}
        keys = (
            "global_aiohttp_connector_limit",
            "global_aiohttp_connector_limit_per_host",
            "global_aiohttp_client_request_debug",
        )
        return cls(**{k: plain[k] for k in keys if plain.get(k) is not None})


# ---- The shared client: one per event loop ----
# A ClientSession belongs to the loop it was made on; a trainer may run each step on a new loop,
# so the client is made again for a loop that has none (NeMo Gym keeps a single one).
_CLIENT_CONFIG: Optional[GlobalAIOHTTPAsyncClientConfig] = None
_CLIENTS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession]" = (
    weakref.WeakKeyDictionary()
)


def set_global_aiohttp_client(cfg: GlobalAIOHTTPAsyncClientConfig) -> Optional[aiohttp.ClientSession]:
    """Sets the limits of the shared client; returns this loop's client when a loop runs."""
    global _CLIENT_CONFIG
    _CLIENT_CONFIG = cfg
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return get_global_aiohttp_client()


def is_global_aiohttp_client_setup() -> bool:
    return _CLIENT_CONFIG is not None


def is_global_aiohttp_client_request_debug_enabled() -> bool:
    return bool(_CLIENT_CONFIG and _CLIENT_CONFIG.global_aiohttp_client_request_debug)


def get_global_aiohttp_client(*_: Any, **__: Any) -> aiohttp.ClientSession:
    """The shared client of the running event loop, made on first use."""
    loop = asyncio.get_running_loop()
    session = _CLIENTS.get(loop)
    if session is None or session.closed:
        cfg = _CLIENT_CONFIG or GlobalAIOHTTPAsyncClientConfig()
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=cfg.global_aiohttp_connector_limit,
                limit_per_host=cfg.global_aiohttp_connector_limit_per_host,
                keepalive_timeout=15.0,
            ),
            timeout=aiohttp.ClientTimeout(),
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        _CLIENTS[loop] = session
    return session


_POOLS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Http1Pool]" = weakref.WeakKeyDictionary()


def run_pool() -> Http1Pool:
    """The running loop's connections of the rollout hot path (ServerClient.post_for_json),
    bounded by the same two connector limits as the shared aiohttp client."""
    loop = asyncio.get_running_loop()
    pool = _POOLS.get(loop)
    if pool is None:
        cfg = _CLIENT_CONFIG or GlobalAIOHTTPAsyncClientConfig()
        pool = Http1Pool(cfg.global_aiohttp_connector_limit, cfg.global_aiohttp_connector_limit_per_host)
        _POOLS[loop] = pool
    return pool


def global_aiohttp_client_exit() -> None:
    """Closes every shared client (at interpreter exit too): on its loop when that can still
    run, else by closing its connections directly (the loop of `asyncio.run` is closed by then)."""
    global _CLIENT_CONFIG
    for loop, session in list(_CLIENTS.items()):
        if session.closed:
            continue
        try:
            if not loop.is_closed() and not loop.is_running():
                loop.run_until_complete(session.close())
            else:
                session.connector.close()
        except Exception:  # exiting: nothing useful to do with a failure to close
            pass
    _CLIENTS.clear()
    for pool in list(_POOLS.values()):
        pool.close()
    _POOLS.clear()
    _CLIENT_CONFIG = None


atexit.register(global_aiohttp_client_exit)


class RequestFailedError(aiohttp.ClientResponseError):
    """An answer outside 2xx. `.status` is the int status code, `.response_content` the raw body
    (bytes), and the message carries the start of the body, so `str(error)` says what failed.
    It pickles without the response's headers, so it crosses process boundaries (Ray)."""

    def __init__(self, status: int, message: str, url: str, response_content: bytes, request_info=None):
        super().__init__(request_info, (), status=status, message=message)
        self.url = url
        self.response_content = response_content

    def __str__(self) -> str:
        return f"{self.status} from {self.url}: {self.message}"

    def __reduce__(self):
        return (type(self), (self.status, self.message, self.url, self.response_content))


def _error_message(reason: Optional[str], content: bytes) -> str:
    text = content.decode("utf-8", errors="replace")
    if len(text) > _BODY_IN_MESSAGE:
        text = text[:_BODY_IN_MESSAGE] + f"... ({len(content)} bytes)"
    return f"{reason or 'error'}: {text}" if text else (reason or "error")


_JSON_HEADERS = {"Content-Type": "application/json"}  # never mutated: shared by every request


async def request(method: str, url: Union[str, yarl.URL], _internal: bool = False, **kwargs: Any) -> aiohttp.ClientResponse:
    """One request through the shared client. A connection that fails (refused, reset, closed
    before the answer) is tried again up to MAX_NUM_TRIES times, 0.5 s apart, then the error is
    raised: a dead server is reported, not waited for. Answers of any status are returned."""
    if "json" in kwargs:
        body = kwargs.pop("json")
        if hasattr(body, "model_dump"):
            body = body.model_dump(exclude_unset=True)
        kwargs["data"] = json.dumps(body).encode()
        given = kwargs.get("headers")
        kwargs["headers"] = {**_JSON_HEADERS, **given} if given else _JSON_HEADERS
    client = get_global_aiohttp_client()
    for attempt in range(1, MAX_NUM_TRIES + 1):
        try:
            return await client.request(method, url, **kwargs)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as e:
            if attempt == MAX_NUM_TRIES:
                raise aiohttp.ClientConnectionError(
                    f"{method} {url} failed {MAX_NUM_TRIES} times: {type(e).__name__}: {e}"
                ) from e
            print(f"{method} {url}: {type(e).__name__}: {e}; trying again in {_RETRY_SLEEP_SECONDS}s", flush=True)
            await asyncio.sleep(_RETRY_SLEEP_SECONDS)
    raise AssertionError("unreachable")


async def raise_for_status(response: aiohttp.ClientResponse) -> None:
    """Raises RequestFailedError (an aiohttp.ClientResponseError) for an answer outside 2xx."""
    if response.ok:
        return
    content = await response.read()
    if is_global_aiohttp_client_request_debug_enabled():
        print(f"Request info: {response.request_info}\nResponse content: {content!r}", flush=True)
    raise RequestFailedError(
        response.status, _error_message(response.reason, content), str(response.url), content
    )


async def get_response_json(response: aiohttp.ClientResponse) -> Any:
    return json.loads(await response.read())


def _get(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310 (http only)
        return answer.read()


def _local(host: str) -> str:
    # A server that listens on every address is reached on loopback from this machine.
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host


class ServerClient:
    """Calls a deployment's servers by instance name: `await client.post(server_name="my_agent",
    url_path="/run", json=row)`."""

    def __init__(self, *, head_server_config: BaseServerConfig, global_config_dict: Any):
        self.head_server_config = BaseServerConfig.model_validate(head_server_config)
        if not isinstance(global_config_dict, Mapping):
            raise TypeError(f"global_config_dict must be a mapping, got {type(global_config_dict).__name__}")
        self.global_config_dict = global_config_dict
        self._plain = to_plain(global_config_dict)
        self._host_ports: dict[str, tuple[str, int]] = {}
        self._urls: dict[tuple[str, str], yarl.URL] = {}  # parsed once: a URL parse per call shows

    @classmethod
    def load_head_server_config(cls) -> BaseServerConfig:
        config = to_plain(get_global_config_dict())
        return BaseServerConfig.model_validate(config[HEAD_SERVER_KEY_NAME])

    @classmethod
    def load_from_global_config(cls, head_server_config: Optional[BaseServerConfig] = None) -> "ServerClient":
        """A client for the deployment whose head server is `head_server_config` (default: the
        head server of this process's global config), with that deployment's config."""
        if head_server_config is None:
            head_server_config = cls.load_head_server_config()
        head = BaseServerConfig.model_validate(head_server_config)
        url = f"http://{_local(head.host)}:{head.port}/global_config_dict_yaml"
        try:
            raw = _get(url, timeout=30)
        except (urllib.error.URLError, OSError) as e:
            raise ValueError(
                f"Could not connect to the head server at {url}: {e}. Is `gym env start` running, "
                "and is its head server on this host and port?"
            ) from e
        # The head server answers a JSON string holding the config as YAML.
        decoded = json.loads(raw)
        config = yaml.safe_load(decoded) if isinstance(decoded, str) else decoded
        if not isinstance(config, Mapping):
            raise ValueError(f"{url} did not answer a config mapping")
        return cls(head_server_config=head, global_config_dict=as_config(config))

    def host_port(self, server_name: str) -> tuple[str, int]:
        found = self._host_ports.get(server_name)
        if found is None:
            block = get_first_server_config_dict(self._plain, server_name)
            if "host" not in block or "port" not in block:
                raise ValueError(f"server instance `{server_name}` has no host and port in this config")
            found = (_local(str(block["host"])), int(block["port"]))
            self._host_ports[server_name] = found
        return found

    def base_url(self, server_name: str) -> str:
        host, port = self.host_port(server_name)
        return f"http://{host}:{port}"

    async def post_for_json(self, server_name: str, url_path: str, body: Any) -> Any:
        """POSTs `body` as JSON and returns the answer's JSON: the rollout hot path, through the
        lean HTTP/1.1 client (nemo_gym/_http1.py) instead of aiohttp. Raises RequestFailedError
        for a status outside 2xx, aiohttp.ClientConnectionError for a server that cannot be
        reached."""
        host, port = self.host_port(server_name)
        status, reason, content = await run_pool().post(
            host, port, url_path, json.dumps(body).encode(), MAX_NUM_TRIES, _RETRY_SLEEP_SECONDS
        )
        if not 200 <= status < 300:
            if is_global_aiohttp_client_request_debug_enabled():
                print(f"POST {self.base_url(server_name)}{url_path}: {status}\nResponse content: {content!r}", flush=True)
            raise RequestFailedError(status, _error_message(reason, content), f"{self.base_url(server_name)}{url_path}", content)
        return json.loads(content)

    async def request(self, server_name: str, url_path: str, method: str, **kwargs: Any) -> aiohttp.ClientResponse:
        url = self._urls.get((server_name, url_path))
        if url is None:
            url = yarl.URL(f"{self.base_url(server_name)}{url_path}")
            if len(self._urls) < 4096:
                self._urls[(server_name, url_path)] = url
        return await request(method, url, _internal=True, **kwargs)

    async def get(self, server_name: str, url_path: str, **kwargs: Any) -> aiohttp.ClientResponse:
        return await self.request(server_name, url_path, "GET", **kwargs)

    async def post(self, server_name: str, url_path: str, **kwargs: Any) -> aiohttp.ClientResponse:
        return await self.request(server_name, url_path, "POST", **kwargs)

    def poll_for_status(self, server_name: str) -> ServerStatus:
        if server_name == HEAD_SERVER_KEY_NAME:
            block = self._plain[HEAD_SERVER_KEY_NAME]
            url = f"http://{_local(str(block['host']))}:{block['port']}"
        else:
            url = self.base_url(server_name)
        try:
            _get(url, timeout=5)
        except urllib.error.HTTPError:
            pass  # any answer means the server is up
        except TimeoutError:
            return "timeout"
        except urllib.error.URLError as e:
            return "timeout" if isinstance(e.reason, TimeoutError) else "connection_error"
        except Exception:
            return "unknown_error"
        return "success"


def get_server_url(server_name: str) -> str:
    block = get_first_server_config_dict(to_plain(get_global_config_dict()), server_name)
    return f"http://{block['host']}:{block['port']}"


def setup_server_client(head_server_config: Optional[BaseServerConfig] = None) -> ServerClient:
    """A ServerClient for the deployment, and the shared aiohttp client sized by its config."""
    server_client = ServerClient.load_from_global_config(head_server_config)
    if not is_global_aiohttp_client_setup():
        set_global_aiohttp_client(GlobalAIOHTTPAsyncClientConfig.model_validate(server_client.global_config_dict))
    return server_client
