"""Python peer of a gym-cpp deployment for bench/e2e_load.sh, built on NeMo Gym's stack.

The same 3-server topology as `gym env start --resources-server example_single_tool_call
--model-type replay_model`, and a rollout collector, each the way NeMo Gym 0.7.0 builds them
(nemo_gym/server_utils.py, base_resources_server.py, base_responses_api_agent.py,
responses_api_agents/simple_agent/app.py, resources_servers/example_single_tool_call/app.py,
rollout_collection.py), restated here, not copied:

- three FastAPI apps, each served by its own uvicorn process (uvloop, httptools; what uvicorn
  picks by default when they are installed, as under NeMo Gym), each with NeMo Gym's middleware
  stack: Starlette's SessionMiddleware keyed by `<ClassName>___<instance>` (a signed session cookie
  set on every answer), an `@app.middleware("http")` function that assigns the session id, and the
  `@app.middleware("http")` exception handler; the resources server also strips a rollout path
  prefix in a pure-ASGI middleware, as NeMo Gym's RolloutContextMiddleware does:
  * `resources_app`: `example_single_tool_call` (`SimpleWeatherResourcesServer`): `/seed_session`
    (empty model, `{}`), `/get_weather` (`{"city"}` -> city and "The weather in <city> is cold."),
    `/verify` (the request validated into create params + Response, answered with reward 1.0);
  * `model_app`: `policy_model`, a replay model (`ReplayResponsesAPIModel`): `/v1/responses`
    validates the create params strictly and answers the next recorded turn of the rollouts file,
    found by input-prefix lookup as gym-cpp's replay_model does (docs/reference/replay-model.md;
    simplified: no session binding, since every input of the benchmark data is distinct);
  * `agent_app`: `example_single_tool_call_simple_agent` (`SimpleAgent`): `/run` = seed_session ->
    its own `/v1/responses` over HTTP (the tool loop: model -> get_weather -> model) -> verify,
    carrying cookies between the calls as NeMo Gym's simple_agent does;
- one shared aiohttp ClientSession per process with NeMo Gym's settings: TCPConnector(limit=102400,
  limit_per_host=1024, keepalive_timeout=15), TCP keepalive 60/10/3 on every socket, no timeout,
  DummyCookieJar (cookies are passed per request); bodies serialised compactly; the retry loop of
  `nemo_gym.server_utils.request` (a disconnect or OS error sleeps 0.5 s and retries);
- pydantic request and response models shaped like NeMo Gym's (bench/ng_models.py);
- `collect`: the rollout collector (`python3 e2e_peer.py collect ...`): expands the input rows
  (agent_ref, _ng_task_index, _ng_rollout_index, num_repeats as abc -> aabbcc), writes the
  materialized inputs, starts one task per row with an asyncio.Semaphore(concurrency) around
  `POST <agent>/run`, and writes each result (plus the indices and agent_ref) as one JSON line,
  flushed, in completion order; failures go to `<stem>_failures.jsonl`. Plain asyncio, as NeMo
  Gym's collector runs.

Differences from NeMo Gym forced by what Debian packages (the benchmark installs nothing else):
pydantic 1.10 instead of 2, FastAPI 0.92 / Starlette 0.26 / uvicorn 0.17 / aiohttp 3.8 instead of
current releases, the standard `json` module instead of orjson. The tqdm progress bar and the
per-percent progress prints of NeMo Gym's collector are left out.

Serving (what bench/e2e_load.sh does; one process per app):
  E2E_PEER_ROLLOUTS=<rollouts.jsonl> E2E_PEER_RESOURCES_URL=http://127.0.0.1:P1 \\
  E2E_PEER_MODEL_URL=http://127.0.0.1:P2 E2E_PEER_AGENT_URL=http://127.0.0.1:P3 \\
    /usr/bin/python3 -m uvicorn e2e_peer:<resources_app|model_app|agent_app> --factory \\
      --app-dir bench --host 127.0.0.1 --port <P1|P2|P3> --no-access-log --log-level warning \\
      --timeout-keep-alive 30
Collecting:
  /usr/bin/python3 bench/e2e_peer.py collect --agent-url http://127.0.0.1:P3 --input FILE \\
      --output OUT.jsonl [--limit N] [--num-repeats R] [--concurrency C]
"""

import asyncio
import inspect
import json
import os
import re
import socket
import sys
import time
import traceback
from contextvars import ContextVar
from typing import Any, Dict, List, Optional, Tuple
from uuid import uuid4

from pydantic import BaseModel, ValidationError

from ng_models import EasyInputMessage, FunctionCallOutput, Response, ResponseCreateParams, Usage

AGENT_NAME = "example_single_tool_call_simple_agent"

# ----------------------------------------------------------------------------------------------
# The shared aiohttp client (nemo_gym.server_utils: GlobalAIOHTTPAsyncClientConfig defaults)
# ----------------------------------------------------------------------------------------------

CONNECTOR_LIMIT = 100 * 1024
CONNECTOR_LIMIT_PER_HOST = 1024
KEEPALIVE_TIMEOUT = 15.0
TCP_KEEPALIVE = (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3))
RETRY_SLEEP = 0.5

_client = None
_disconnects = 0


def _keepalive(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in TCP_KEEPALIVE:
        opt = getattr(socket, name, None)
        if opt is not None:
            sock.setsockopt(socket.IPPROTO_TCP, opt, value)


def _make_connector():
    import aiohttp

    kwargs = dict(limit=CONNECTOR_LIMIT, limit_per_host=CONNECTOR_LIMIT_PER_HOST, keepalive_timeout=KEEPALIVE_TIMEOUT)
    if "socket_factory" in inspect.signature(aiohttp.TCPConnector.__init__).parameters:  # aiohttp >= 3.12

        def factory(addr_info):
            family, type_, proto, _, _ = addr_info
            sock = socket.socket(family=family, type=type_, proto=proto)
            _keepalive(sock)
            return sock

        return aiohttp.TCPConnector(socket_factory=factory, **kwargs)

    class KeepaliveConnector(aiohttp.TCPConnector):
        # Debian's aiohttp 3.8 has no socket_factory: set the same options once connected.
        async def _wrap_create_connection(self, *args, **kw):
            transport, protocol = await super()._wrap_create_connection(*args, **kw)
            sock = transport.get_extra_info("socket")
            if sock is not None:
                _keepalive(sock)
            return transport, protocol

    return KeepaliveConnector(**kwargs)


def client():
    """The process-wide ClientSession, made on first use inside the running loop."""
    global _client
    if _client is None:
        import aiohttp

        _client = aiohttp.ClientSession(
            connector=_make_connector(), timeout=aiohttp.ClientTimeout(), cookie_jar=aiohttp.DummyCookieJar()
        )
    return _client


def dumps(obj: Any) -> bytes:
    # orjson's output: compact, UTF-8, non-ASCII unescaped.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


async def request(method: str, url: str, json_body: Any = None, cookies: Any = None):
    """nemo_gym.server_utils.request for a Gym-internal call: retry disconnects and OS errors."""
    import aiohttp

    global _disconnects
    kwargs: Dict[str, Any] = {}
    if json_body is not None:
        kwargs["data"] = dumps(json_body)
        kwargs["headers"] = {"Content-Type": "application/json"}
    if cookies is not None:
        kwargs["cookies"] = cookies
    while True:
        try:
            return await client().request(method=method, url=url, **kwargs)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as e:
            _disconnects += 1
            if _disconnects % 100 == 0:
                print(f"[request_retry url={url} error={type(e).__name__}] {_disconnects} disconnects", flush=True)
            await asyncio.sleep(RETRY_SLEEP)
        except Exception as e:  # an internal call retries every other error too (printed once)
            _disconnects += 1
            if _disconnects == 1 or _disconnects % 100 == 0:
                print(f"[request_retry url={url} error={e!r}]", flush=True)
            await asyncio.sleep(RETRY_SLEEP)


class InnerServerError(Exception):
    def __init__(self, status: int, content: bytes):
        super().__init__(f"{status}")
        self.status = status
        self.content = content


async def raise_for_status(response) -> None:
    if response.status >= 400:
        raise InnerServerError(response.status, await response.content.read())


async def response_json(response) -> Any:
    return json.loads(await response.read())


def url_of(var: str) -> str:
    value = os.environ.get(var)
    if not value:
        raise SystemExit(f"e2e_peer: set {var}")
    return value.rstrip("/")


# ----------------------------------------------------------------------------------------------
# NeMo Gym's per-server middleware stack (SimpleServer.setup_session_middleware,
# setup_exception_middleware; RolloutContextMiddleware on resources servers)
# ----------------------------------------------------------------------------------------------

_rollout_id: ContextVar[Optional[str]] = ContextVar("rollout_id", default=None)


class RolloutPrefixMiddleware:
    _PREFIX = re.compile(r"^/ng-rollout/(?P<rollout_id>[A-Za-z0-9_.:\-]+)(?P<rest>/.*)$")

    def __init__(self, app):
        self.inner = app

    async def __call__(self, scope, receive, send):
        m = self._PREFIX.match(scope.get("path", "")) if scope.get("type") == "http" else None
        if m is None:
            await self.inner(scope, receive, send)
            return
        rest = m.group("rest")
        token = _rollout_id.set(m.group("rollout_id"))
        try:
            await self.inner({**scope, "path": rest, "raw_path": rest.encode()}, receive, send)
        finally:
            _rollout_id.reset(token)


def make_app(cookie_name: str, rollout_prefix: bool = False):
    from fastapi import FastAPI, Request
    from starlette.middleware.sessions import SessionMiddleware

    app = FastAPI()

    @app.middleware("http")
    async def add_session_id(request: Request, call_next):
        request.session["session_id"] = request.session.get("session_id", str(uuid4()))
        return await call_next(request)

    app.add_middleware(SessionMiddleware, secret_key=cookie_name, session_cookie=cookie_name)
    if rollout_prefix:
        app.add_middleware(RolloutPrefixMiddleware)

    @app.get("/")
    async def liveness():
        return {"status": "ok"}

    return app


def add_exception_middleware(app, cookie_name: str) -> None:
    from fastapi import Request
    from fastapi.responses import JSONResponse

    @app.middleware("http")
    async def exception_handling(request: Request, call_next):
        try:
            return await call_next(request)
        except InnerServerError as e:
            text = e.content.decode(errors="replace")
            return JSONResponse(content=f"Hit an exception in {cookie_name} calling an inner server: {text}",
                                status_code=500)
        except Exception as e:
            traceback.print_exc()
            return JSONResponse(content=repr(e), status_code=500)


# ----------------------------------------------------------------------------------------------
# Request / response models (nemo_gym.base_resources_server, simple_agent, example_single_tool_call)
# ----------------------------------------------------------------------------------------------


class RunRequest(BaseModel):
    responses_create_params: ResponseCreateParams


class VerifyRequest(RunRequest):
    response: Response


class VerifyResponse(VerifyRequest):
    reward: float


class SeedSessionRequest(BaseModel):
    pass


class SeedSessionResponse(BaseModel):
    pass


class AgentRunRequest(RunRequest):
    class Config:
        extra = "allow"


class AgentVerifyRequest(VerifyRequest):
    class Config:
        extra = "allow"


class AgentVerifyResponse(VerifyResponse):
    class Config:
        extra = "allow"


class GetWeatherRequest(BaseModel):
    city: str


class GetWeatherResponse(BaseModel):
    city: str
    weather_description: str


# ----------------------------------------------------------------------------------------------
# Resources server: example_single_tool_call
# ----------------------------------------------------------------------------------------------


def resources_app():
    name = "SimpleWeatherResourcesServer___example_single_tool_call"
    app = make_app(name, rollout_prefix=True)

    @app.post("/seed_session")
    async def seed_session(body: SeedSessionRequest) -> SeedSessionResponse:
        return SeedSessionResponse()

    @app.post("/verify")
    async def verify(body: VerifyRequest) -> VerifyResponse:
        return VerifyResponse(**body.dict(), reward=1.0)

    @app.post("/get_weather")
    async def get_weather(body: GetWeatherRequest) -> GetWeatherResponse:
        return GetWeatherResponse(city=body.city, weather_description=f"The weather in {body.city} is cold.")

    add_exception_middleware(app, name)
    return app


# ----------------------------------------------------------------------------------------------
# Model server: replay of recorded rollouts (as gym-cpp's replay_model)
# ----------------------------------------------------------------------------------------------


def _drop_nulls(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_nulls(x) for x in v]
    return v


def normalise_input(inp: Any) -> List[dict]:
    if isinstance(inp, str):
        return [{"type": "message", "role": "user", "content": inp}]
    out = []
    for item in inp or []:
        item = _drop_nulls(item)
        if isinstance(item, dict) and "role" in item and "type" not in item:
            item = {**item, "type": "message"}
        out.append(item)
    return out


def canonical(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _texts(item: dict) -> List[str]:
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    return [p.get("text", p.get("refusal")) for p in content or [] if isinstance(p, dict)]


def _json_or_text(s: Any) -> Any:
    if isinstance(s, str):
        try:
            return ("json", json.loads(s))
        except ValueError:
            return ("text", s)
    return ("value", s)


def items_match(got: dict, rec: dict) -> bool:
    t = got.get("type")
    if t != rec.get("type"):
        return False
    if t == "function_call":
        return all(got.get(k) == rec.get(k) for k in ("call_id", "name", "arguments"))
    if t == "message":
        return got.get("role") == rec.get("role") and _texts(got) == _texts(rec)
    if t == "reasoning":
        if got.get("id") and rec.get("id"):
            return got["id"] == rec["id"]
        return [s.get("text") for s in got.get("summary", [])] == [s.get("text") for s in rec.get("summary", [])]
    if t == "function_call_output":  # tool_output_check: semantic
        return got.get("call_id") == rec.get("call_id") and _json_or_text(got.get("output")) == _json_or_text(
            rec.get("output"))
    return canonical(got) == canonical(rec)


class ReplayError(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class ReplayStore:
    def __init__(self, path: str):
        self.rows: List[Tuple[List[dict], List[dict], dict, int]] = []
        self.index: Dict[str, List[int]] = {}
        lengths = set()
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                rec = json.loads(line)
                params, response = rec.get("responses_create_params") or {}, rec.get("response") or {}
                if "input" not in params or not isinstance(response.get("output"), list) or "_ng_failure_class" in rec:
                    continue
                inp = normalise_input(params["input"])
                self.index.setdefault(canonical(inp), []).append(len(self.rows))
                lengths.add(len(inp))
                self.rows.append((inp, [_drop_nulls(o) for o in response["output"]], response, line_no))
        self.lengths = sorted(lengths)

    def answer(self, inp: List[dict]) -> Tuple[dict, bool]:
        candidates = []
        for n in self.lengths:
            if n > len(inp):
                break
            candidates += self.index.get(canonical(inp[:n]), [])
        if not candidates:
            raise ReplayError("replay_no_match", "no recorded input is a prefix of the request input")
        for idx in candidates:
            rec_in, out, envelope, line_no = self.rows[idx]
            cont = inp[len(rec_in):]
            if len(cont) > len(out):
                continue
            if cont and cont[-1].get("type") != "function_call_output":
                continue
            if len(cont) < len(out) and out[len(cont)].get("type") == "function_call_output":
                continue
            if not all(items_match(g, r) for g, r in zip(cont, out)):
                continue
            if len(cont) == len(out):
                raise ReplayError("replay_exhausted", f"recorded row at line {line_no} has no items left")
            q = next((i for i in range(len(cont), len(out)) if out[i].get("type") == "function_call_output"), len(out))
            answer = dict(envelope)  # parsed into a new Response below; the store is never mutated
            answer["output"] = envelope["output"][len(cont):q]
            final = q == len(out)
            if not final:
                turn = 1 + sum(1 for i, item in enumerate(cont) if item.get("type") == "function_call_output"
                               and (i + 1 == len(cont) or cont[i + 1].get("type") != "function_call_output"))
                answer.update(usage=None, status="completed", incomplete_details=None, id=f"{envelope['id']}_t{turn}")
            return answer, final
        raise ReplayError("replay_diverged", "the request input matches a recorded input but no continuation")


def model_app():
    from fastapi import Body, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    name = "ReplayResponsesAPIModel___policy_model"
    store = ReplayStore(os.environ["E2E_PEER_ROLLOUTS"])
    app = make_app(name)

    @app.post("/v1/responses")
    async def responses_dispatch(request: Request, body: dict = Body()):
        try:
            params = ResponseCreateParams.parse_obj(body)
        except ValidationError as e:
            raise RequestValidationError(e.raw_errors)
        try:
            inp = params.input
            inp = inp if isinstance(inp, str) else [i.dict() if isinstance(i, BaseModel) else i for i in inp]
            envelope, _ = store.answer(normalise_input(inp))
        except ReplayError as e:
            return JSONResponse(status_code=409, content={"detail": {"type": e.kind, "message": str(e)}})
        return Response.parse_obj(envelope)

    add_exception_middleware(app, name)
    return app


# ----------------------------------------------------------------------------------------------
# Agent server: simple_agent
# ----------------------------------------------------------------------------------------------


def accumulate_usage(total: Optional[Usage], add: Optional[Usage]) -> Optional[Usage]:
    if add is None:
        return total
    if total is None:
        return add.copy(deep=True)
    out = total.copy(deep=True)
    out.input_tokens += add.input_tokens
    out.output_tokens += add.output_tokens
    out.total_tokens += add.total_tokens
    a, b = out.input_tokens_details, add.input_tokens_details
    if a is not None and b is not None:
        a.cached_tokens = None if a.cached_tokens is None or b.cached_tokens is None else a.cached_tokens + b.cached_tokens
    a, b = out.output_tokens_details, add.output_tokens_details
    if a is not None and b is not None:
        a.reasoning_tokens = (None if a.reasoning_tokens is None or b.reasoning_tokens is None
                              else a.reasoning_tokens + b.reasoning_tokens)
    return out


def agent_app():
    from fastapi import Body, Request
    from fastapi import Response as HTTPResponse

    name = f"SimpleAgent___{AGENT_NAME}"
    resources_url = url_of("E2E_PEER_RESOURCES_URL")
    model_url = url_of("E2E_PEER_MODEL_URL")
    self_url = url_of("E2E_PEER_AGENT_URL")
    max_steps = int(os.environ.get("E2E_PEER_MAX_STEPS", "0")) or None
    app = make_app(name)

    async def create_episode(body: ResponseCreateParams, resources_cookies: Any):
        body = body.copy(deep=True)
        if isinstance(body.input, str):
            body.input = [EasyInputMessage(role="user", content=body.input)]
        new_outputs: List[Any] = []
        usage = None
        step = 0
        model_cookies = None
        while True:
            step += 1
            new_body = body.copy(update={"input": body.input + new_outputs})
            r = await request("POST", f"{model_url}/v1/responses", new_body.dict(exclude_unset=True), model_cookies)
            await raise_for_status(r)
            data = await response_json(r)
            model_cookies = r.cookies
            try:
                model_response = Response.parse_obj(data)
            except ValidationError as e:
                raise RuntimeError(f"Received an invalid response from model server: {json.dumps(data)}") from e
            output = model_response.output
            new_outputs.extend(output)
            usage = accumulate_usage(usage, model_response.usage)
            model_response.usage = None
            if model_response.incomplete_details:
                break
            calls = [o for o in output if o.type == "function_call"]
            messages = [o for o in output if o.type == "message" and o.role == "assistant"]
            if not calls and messages:
                break
            for call in calls:
                try:
                    args = json.loads(call.arguments)
                except (json.JSONDecodeError, TypeError) as e:
                    tool_output = json.dumps({"error": f"Invalid tool call arguments: {e!r}"})
                else:
                    r = await request("POST", f"{resources_url}/{call.name}", args, resources_cookies)
                    tool_output = (await r.content.read()).decode()
                    resources_cookies = r.cookies
                new_outputs.append(FunctionCallOutput(type="function_call_output", call_id=call.call_id, output=tool_output))
            if max_steps and step >= max_steps:
                break
        model_response.output = new_outputs
        model_response.usage = usage
        return model_response, model_cookies, resources_cookies

    @app.post("/v1/responses")
    async def responses(request: Request, response: HTTPResponse, body: ResponseCreateParams = Body()) -> Response:
        model_response, model_cookies, resources_cookies = await create_episode(body, request.cookies)
        for k, v in (*resources_cookies.items(), *model_cookies.items()):
            response.set_cookie(k, v)
        return model_response

    @app.post("/run")
    async def run(request: Request, body: AgentRunRequest) -> AgentVerifyResponse:
        cookies = request.cookies
        r = await request_post(f"{resources_url}/seed_session", body.dict(), cookies)
        await raise_for_status(r)
        cookies = r.cookies
        r = await request_post(f"{self_url}/v1/responses", body.responses_create_params.dict(exclude_unset=True), cookies)
        await raise_for_status(r)
        model_response_json = await response_json(r)
        cookies = r.cookies
        verify_request = AgentVerifyRequest.parse_obj({**body.dict(), "response": model_response_json})
        r = await request_post(f"{resources_url}/verify", verify_request.dict(), cookies)
        await raise_for_status(r)
        return AgentVerifyResponse.parse_obj(await response_json(r))

    add_exception_middleware(app, name)
    return app


async def request_post(url: str, body: Any, cookies: Any):
    return await request("POST", url, body, cookies)


# ----------------------------------------------------------------------------------------------
# Collector (nemo_gym.rollout_collection: expansion, semaphore, /run, JSONL output)
# ----------------------------------------------------------------------------------------------


def expand_rows(path: str, limit: Optional[int], num_repeats: int, agent_name: str) -> List[dict]:
    rows = []
    task_of_line: Dict[str, int] = {}
    rollouts_of_task: Dict[int, int] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            if limit is not None and n >= limit:
                break
            row = json.loads(line)
            row.setdefault("agent_ref", {"type": "responses_api_agents", "name": agent_name})
            if "_ng_task_index" not in row:
                row["_ng_task_index"] = task_of_line.setdefault(line, len(task_of_line))
            task = row["_ng_task_index"]
            for _ in range(num_repeats):
                r = dict(row)
                r["_ng_rollout_index"] = rollouts_of_task.get(task, 0)
                rollouts_of_task[task] = r["_ng_rollout_index"] + 1
                rows.append(r)
    return rows


async def collect(args) -> int:
    rows = expand_rows(args.input, args.limit, args.num_repeats, args.agent)
    stem = args.output[:-len(".jsonl")] if args.output.endswith(".jsonl") else args.output
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(f"{stem}_materialized_inputs.jsonl", "wb") as f:
        for row in rows:
            f.write(dumps(row) + b"\n")
    if os.path.exists(args.output):
        os.unlink(args.output)
    semaphore = asyncio.Semaphore(args.concurrency) if args.concurrency else None
    run_url = f"{args.agent_url.rstrip('/')}/run"

    async def post_one(row: dict):
        async def go():
            r = await request("POST", run_url, row)
            await raise_for_status(r)
            return row, await response_json(r)

        if semaphore is None:
            return await go()
        async with semaphore:
            return await go()

    start = time.monotonic()
    failures = 0
    done = 0
    tasks = [asyncio.ensure_future(post_one(row)) for row in rows]
    with open(args.output, "ab") as out, open(f"{stem}_failures.jsonl", "ab") as failed:
        for future in asyncio.as_completed(tasks):
            try:
                row, result = await future
            except Exception as e:  # the peer keeps going; NeMo Gym's collector would stop here
                failures += 1
                text = e.content.decode(errors="replace")[:300] if isinstance(e, InnerServerError) else repr(e)
                failed.write(dumps({"_ng_failure_class": "agent_run_error", "_ng_failure_error": text}) + b"\n")
                failed.flush()
                continue
            for key in ("_ng_task_index", "_ng_rollout_index", "agent_ref"):
                result[key] = row[key]
            out.write(dumps(result) + b"\n")
            out.flush()
            done += 1
    elapsed = time.monotonic() - start
    await client().close()
    import resource

    print(f"peer collector: {done} rollouts, {failures} failures, {elapsed:.3f} s of dispatch "
          f"({done / elapsed if elapsed else 0:.1f} rollouts/s), concurrency {args.concurrency or 'unbounded'}, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} kB", flush=True)
    return 3 if failures else 0


# ----------------------------------------------------------------------------------------------
# `python3 e2e_peer.py time ROWS.jsonl ROLLOUTS.jsonl [N]`: the pydantic work of one rollout, without
# HTTP, on whichever pydantic the interpreter has: every validation, dump, copy and response-model
# check the peer's three servers make for one rollout (the agent's /run and /v1/responses, two
# model turns, /seed_session, /get_weather, /verify). Serialising a returned model is timed as
# .dict() on pydantic 1 and model_dump(mode="json") on pydantic 2 (what FastAPI's response path
# uses there); FastAPI's own encoding pass and the JSON text are left out (the same on both). Runs
# without FastAPI, so that an interpreter with pydantic 2 (what NeMo Gym runs on) can time it too.
# ----------------------------------------------------------------------------------------------


def _time(rows_path: str, rollouts_path: str, n: int) -> None:
    import pydantic
    import warnings

    warnings.filterwarnings("ignore")
    v2 = int(pydantic.VERSION.split(".")[0]) >= 2
    if v2:
        parse = lambda cls, d: cls.model_validate(d)  # noqa: E731
        dump = lambda m, **kw: m.model_dump(**kw)  # noqa: E731
        mcopy = lambda m, **kw: m.model_copy(**kw)  # noqa: E731
        check = lambda cls, m: cls.model_validate(m)  # noqa: E731 (FastAPI's response_model check)
        out = lambda m: m.model_dump(mode="json")  # noqa: E731
    else:
        parse = lambda cls, d: cls.parse_obj(d)  # noqa: E731
        dump = lambda m, **kw: m.dict(**kw)  # noqa: E731
        mcopy = lambda m, **kw: m.copy(**kw)  # noqa: E731
        check = lambda cls, m: cls.validate(m)  # noqa: E731
        out = lambda m: m.dict()  # noqa: E731

    row = json.loads(open(rows_path, encoding="utf-8").readline())
    store = ReplayStore(rollouts_path)
    row.update(agent_ref={"type": "responses_api_agents", "name": AGENT_NAME}, _ng_task_index=0,
               _ng_rollout_index=0)
    # The JSON bodies of the exchanges, computed once with the peer's own logic.
    params = row["responses_create_params"]
    turn1, _ = store.answer(normalise_input(params["input"]))
    fc = turn1["output"][0]
    city = json.loads(fc["arguments"])["city"]
    tool_output = json.dumps({"city": city, "weather_description": f"The weather in {city} is cold."},
                             separators=(",", ":"), ensure_ascii=False)
    turn2_input = params["input"] + [fc, {"type": "function_call_output", "call_id": fc["call_id"],
                                          "output": tool_output}]
    turn2, _ = store.answer(normalise_input(turn2_input))
    final = dict(turn2, output=[fc, {"type": "function_call_output", "call_id": fc["call_id"],
                                     "output": tool_output}] + turn2["output"])

    def one() -> None:
        # agent /run: the body, the /seed_session and /v1/responses bodies
        body = parse(AgentRunRequest, row)
        dump(body)
        dump(body.responses_create_params, exclude_unset=True)
        # resources /seed_session
        parse(SeedSessionRequest, row)
        out(SeedSessionResponse())
        # agent /v1/responses: the body, two model turns, one tool call, the answer
        p = parse(ResponseCreateParams, params)
        p = mcopy(p, deep=True)
        new_outputs: List[Any] = []
        usage = None
        last = None
        for envelope in (turn1, turn2):
            new_body = mcopy(p, update={"input": p.input + new_outputs})
            sent = dump(new_body, exclude_unset=True)
            # model /v1/responses: strict params, the answer as a Response, serialised
            mp = parse(ResponseCreateParams, json.loads(json.dumps(sent)))
            [dump(i) if isinstance(i, BaseModel) else i for i in mp.input]
            out(parse(Response, envelope))
            last = parse(Response, envelope)  # the agent validates the model's answer
            new_outputs.extend(last.output)
            usage = accumulate_usage_any(usage, last.usage, mcopy)
            for o in last.output:
                if o.type == "function_call":
                    # resources /get_weather
                    c = parse(GetWeatherRequest, json.loads(o.arguments)).city
                    out(GetWeatherResponse(city=c, weather_description=f"The weather in {c} is cold."))
                    new_outputs.append(FunctionCallOutput(type="function_call_output", call_id=o.call_id,
                                                          output=tool_output))
        last.output = new_outputs
        last.usage = usage
        out(check(Response, last))
        # agent /run: the /verify body; resources /verify; the agent's answer
        verify_body = dump(parse(AgentVerifyRequest, {**dump(body), "response": final}))
        vreq = parse(VerifyRequest, verify_body)
        vres = VerifyResponse(**dump(vreq), reward=1.0)
        answer = out(check(VerifyResponse, vres))
        agent_answer = check(AgentVerifyResponse, parse(AgentVerifyResponse, json.loads(json.dumps(answer))))
        out(agent_answer)
        return [SeedSessionResponse(), GetWeatherResponse(city="x", weather_description="y"), last, vres,
                agent_answer]

    for _ in range(max(n // 10, 1)):
        one()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(n):
            one()
        best = min(best, (time.perf_counter() - t) / n)
    core = ""
    if v2:
        import pydantic_core

        core = f" (pydantic-core {pydantic_core.__version__})"
    print(f"{best * 1e3:.3f} ms per rollout: pydantic {pydantic.VERSION}{core}, Python {sys.version.split()[0]}")
    if not v2:
        # FastAPI 0.92 runs each answer of a route with a response model through jsonable_encoder
        # (a pure-Python walk) after .dict(); FastAPI >= 0.100 on pydantic 2 serialises those
        # answers in pydantic-core instead. The extra walk, for the 5 such answers of a rollout:
        from fastapi.encoders import jsonable_encoder

        answers = one()
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(n):
                for a in answers:
                    jsonable_encoder(a.dict())
            best = min(best, (time.perf_counter() - t) / n)
        print(f"{best * 1e3:.3f} ms per rollout: FastAPI {__import__('fastapi').__version__} jsonable_encoder "
              "walk of the response-model answers")


def accumulate_usage_any(total, add, mcopy):
    if add is None:
        return total
    if total is None:
        return mcopy(add, deep=True)
    out = mcopy(total, deep=True)
    out.input_tokens += add.input_tokens
    out.output_tokens += add.output_tokens
    out.total_tokens += add.total_tokens
    return out


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description="e2e_peer collector (the servers are run with uvicorn)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--agent-url", required=True)
    c.add_argument("--input", required=True)
    c.add_argument("--output", required=True)
    c.add_argument("--agent", default=AGENT_NAME)
    c.add_argument("--limit", type=int)
    c.add_argument("--num-repeats", type=int, default=1)
    c.add_argument("--concurrency", type=int)
    t = sub.add_parser("time", help="time the pydantic work of one rollout (no HTTP)")
    t.add_argument("rows")
    t.add_argument("rollouts")
    t.add_argument("n", type=int, nargs="?", default=200)
    args = ap.parse_args()
    if args.cmd == "time":
        _time(args.rows, args.rollouts, args.n)
        return 0
    return asyncio.run(collect(args))


if __name__ == "__main__":
    sys.exit(main())
