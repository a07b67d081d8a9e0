"""Python peer of gym-cpp's `vllm_model` for bench/model_proxy_load.sh, built as NeMo Gym's is.

NeMo Gym 0.7.0's `responses_api_models/vllm_model` (app.py, nemo_gym/responses_converter.py,
nemo_gym/openai_utils.py, nemo_gym/server_utils.py), restated here, not copied:

- one FastAPI app served by uvicorn in one process (uvloop, httptools), with the per-server
  middleware stack of NeMo Gym (a signed session cookie `VLLMModel___<name>`, the session-id
  middleware, the exception middleware; bench/e2e_peer.py's make_app / add_exception_middleware);
- `POST /v1/responses`: the body is taken as a dict and validated strictly into the create params
  model (bench/ng_models.py's ResponseCreateParams, shaped like NeMoGymResponseCreateParams-
  NonStreaming; a validation error answers 422), then converted to Chat Completions create params
  the way ResponsesConverter does:
    * `input` as a string -> one user message; message items keep their role, their `input_text`
      parts become `text` parts (`input_image` -> `image_url`); the assistant turn is rebuilt from
      consecutive assistant message / `reasoning` / `function_call` items: reasoning summaries
      become `<think>...</think>` text in front of the assistant content, function calls become
      `tool_calls`; `function_call_output` -> a `tool` message;
    * `instructions` -> one leading system message (folding in the leading system/developer
      messages); `max_output_tokens` -> `max_tokens`; `reasoning.effort` -> `reasoning_effort`;
      function tools -> `{"type": "function", "function": {...}}` (no `strict`); without tools,
      `tool_choice` and `parallel_tool_calls` are dropped (`tool_choice: "required"` is an error);
      the other fields pass when Chat Completions has them, the rest are dropped;
  the result is validated into a Chat Completions create params model, dumped with only the set
  fields, `model` replaced by the configured one (upstream's _preprocess_chat_completion_create_params:
  `chat_template_kwargs` / `extra_body` merged from the config and metadata, a null top_logprobs
  dropped; with --uses-reasoning-parser the `<think>` text of assistant history goes to
  `reasoning_content`/`reasoning`), and POSTed to `{base_url}/chat/completions` (Authorization:
  Bearer <api key>) with the process-wide aiohttp ClientSession of NeMo Gym (connector limit
  102400, 1024 per host; bench/e2e_peer.py's client()), retrying 429/5xx answers and dropped
  connections as NeMo Gym's NeMoGymAsyncOpenAI does (a 400 about the context length becomes an
  empty `length` completion);
- the answer is validated into a ChatCompletion model and converted back: with
  --uses-reasoning-parser, `reasoning_content` is wrapped in `<think>` tags in front of the content
  and `<think>...</think>` spans become a `reasoning` item (summary_text parts); without it a
  `reasoning_content` is an error, as upstream asserts; the rest of the content -> an assistant
  `message` with one `output_text` part (also when the output would otherwise be empty);
  `tool_calls` -> `function_call` items (id and call_id = the tool call id); finish_reason
  `length` -> status `incomplete` with incomplete_details `max_output_tokens` (`content_filter`
  likewise); usage prompt/completion/total tokens -> input/output/total tokens with cached and
  reasoning token details; the Response echoes the create params (model = the configured model)
  and is built as a pydantic Response model (ng_models.Response) that FastAPI serialises;
- `POST /v1/chat/completions`: validated into the create params model, `model` replaced, the
  same preprocessing, forwarded, the answer validated into the ChatCompletion model and returned;
- `GET /`: liveness.

Left out (not on the benchmark's path): token-id information (return_token_id_information),
several base URLs, sampling_overrides, audio, the completions API, the model-call capture
middleware and /v1/messages. Differences forced by Debian's packages: pydantic 1.10 instead of 2,
FastAPI 0.92 / uvicorn 0.17 / aiohttp 3.8, the standard json module instead of orjson.

Usage:
  /usr/bin/python3 bench/vllm_peer.py --port P --base-url http://127.0.0.1:N/v1
      [--host 127.0.0.1] [--model fake-model] [--api-key dummy] [--name policy_model]
      [--uses-reasoning-parser]
Prints "LISTENING <port>" once it serves (--port 0 picks a free port).
  /usr/bin/python3 bench/vllm_peer.py convert RESPONSES_BODY.json [--model M]
Prints the Chat Completions body the peer would send for a Responses create-params body.
  python3 bench/vllm_peer.py time RESPONSES_BODY.json [N]
Times the work of one proxied call that is not HTTP (JSON, validation, conversion both ways, the
Response model) on this interpreter's pydantic: with pydantic 2 (what NeMo Gym runs on) too, as
the models load on both.
"""

import asyncio
import json
import os
import re
import socket
import sys
import time
from copy import deepcopy
from typing import Any, Dict, List, Literal, Optional, Tuple, Union
from uuid import uuid4

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pydantic  # noqa: E402
from pydantic import BaseModel, ValidationError  # noqa: E402

from ng_models import (  # noqa: E402
    PYDANTIC_2,
    FunctionToolCall,
    OutputMessage,
    OutputText,
    ReasoningItem,
    Response,
    ResponseCreateParams,
    Summary,
    Usage,
)

RETRY_STATUSES = (429, 500, 502, 503, 504, 520)
RATE_LIMIT_STATUSES = (429, 502, 503, 504, 520)
MAX_NUM_TRIES = 3
THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)


class Settings:
    """The server's config (VLLMModelConfig's keys that the benchmark uses)."""

    name = "policy_model"
    base_url = "http://127.0.0.1:8000/v1"
    api_key = "dummy"
    model = "fake-model"
    uses_reasoning_parser = False
    uses_interleaved_reasoning = True
    chat_template_kwargs: Optional[Dict[str, Any]] = None
    extra_body: Optional[Dict[str, Any]] = None


CFG = Settings()

# The served peer runs on Debian's pydantic 1; the `time` command also runs on pydantic 2.
if PYDANTIC_2:
    def load(model, obj):
        return model.model_validate(obj)

    def dump(m, **kw):
        return m.model_dump(**kw)
else:
    def load(model, obj):
        return model.parse_obj(obj)

    def dump(m, **kw):
        return m.dict(**kw)

# ----------------------------------------------------------------------------------------------
# Chat Completions models (the main fields of NeMoGymChatCompletionCreateParamsNonStreaming and
# of the OpenAI SDK's ChatCompletion, which keeps unknown fields)
# ----------------------------------------------------------------------------------------------


class _Allow(BaseModel):
    class Config:
        extra = "allow"


class ToolCallFunction(BaseModel):
    arguments: str
    name: str


class ToolCall(_Allow):
    id: str
    function: ToolCallFunction
    type: Literal["function"] = "function"


class ChatMessageParam(_Allow):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Union[str, List[Dict[str, Any]], None] = None
    name: Optional[str] = None
    tool_calls: Optional[List[ToolCall]] = None
    tool_call_id: Optional[str] = None


class FunctionDefinition(BaseModel):
    name: str
    description: Optional[str] = None
    parameters: Optional[Dict[str, Any]] = None
    strict: Optional[bool] = None


class ChatToolParam(BaseModel):
    type: Literal["function"] = "function"
    function: FunctionDefinition


class ChatCreateParams(BaseModel):
    # Unknown keys are dropped, as the NeMo Gym model (pydantic's default) drops them.
    messages: List[ChatMessageParam]
    model: Optional[str] = None
    frequency_penalty: Optional[float] = None
    logit_bias: Optional[Dict[str, int]] = None
    logprobs: Optional[bool] = None
    max_completion_tokens: Optional[int] = None
    max_tokens: Optional[int] = None
    metadata: Optional[Dict[str, str]] = None
    n: Optional[int] = None
    parallel_tool_calls: bool = True
    presence_penalty: Optional[float] = None
    reasoning_effort: Optional[Literal["minimal", "low", "medium", "high"]] = None
    response_format: Optional[Dict[str, Any]] = None
    seed: Optional[int] = None
    service_tier: Optional[Literal["auto", "default", "flex", "scale", "priority"]] = None
    stop: Union[str, List[str], None] = None
    store: Optional[bool] = None
    temperature: Optional[float] = None
    tool_choice: Union[Literal["none", "auto", "required"], Dict[str, Any], None] = None
    tools: Optional[List[ChatToolParam]] = None
    top_logprobs: Optional[int] = None
    top_p: Optional[float] = None
    user: Optional[str] = None
    stream: Optional[Literal[False]] = None


class ChatMessage(_Allow):
    content: Optional[str] = None
    refusal: Optional[str] = None
    role: Literal["assistant"] = "assistant"
    tool_calls: Optional[List[ToolCall]] = None


class Choice(_Allow):
    finish_reason: Optional[str] = None
    index: int = 0
    logprobs: Optional[Dict[str, Any]] = None
    message: ChatMessage


class CompletionUsage(_Allow):
    completion_tokens: int
    prompt_tokens: int
    total_tokens: int
    completion_tokens_details: Optional[Dict[str, Any]] = None
    prompt_tokens_details: Optional[Dict[str, Any]] = None


class ChatCompletion(_Allow):
    id: str
    choices: List[Choice]
    created: int = 0
    model: str = ""
    object: str = "chat.completion"
    usage: Optional[CompletionUsage] = None


# ----------------------------------------------------------------------------------------------
# Responses create params -> Chat Completions create params (ResponsesConverter)
# ----------------------------------------------------------------------------------------------


def think(texts: List[str]) -> str:
    return "".join(f"<think>{t}</think>" for t in texts if t)


def split_think(content: str) -> Tuple[List[str], str]:
    return THINK.findall(content), THINK.sub("", content)


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


class _Turn:
    """The messages built so far and the assistant turn being gathered."""

    def __init__(self) -> None:
        self.messages: List[Dict[str, Any]] = []
        self.content = ""
        self.tool_calls: List[Dict[str, Any]] = []
        self.pending = False

    def flush(self) -> None:
        if not (self.pending or self.content or self.tool_calls):
            return
        msg: Dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:  # never `tool_calls: []`
            msg["tool_calls"] = self.tool_calls
        self.messages.append(msg)
        self.content, self.tool_calls, self.pending = "", [], False


def _parts(content: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for p in content:
        kind = p.get("type")
        if kind == "input_text":
            out.append({"type": "text", "text": p["text"]})
        elif kind == "input_image":
            url = p.get("image_url") or ""
            if isinstance(url, dict):
                url = url.get("url", "")
            if not url:
                raise ValueError("input_image requires a non-empty image_url")
            out.append({"type": "image_url", "image_url": {"url": url, "detail": p.get("detail", "auto")}})
        else:
            raise NotImplementedError(f"Unsupported part param type: {kind}")
    return out


def _message(m: Dict[str, Any], turn: _Turn) -> None:
    role, content = m["role"], m.get("content")
    if role == "assistant":
        turn.pending = True
        if isinstance(content, (str, list)):
            turn.content += text_of(content)
        for tc in m.get("tool_calls") or []:
            turn.tool_calls.append({"id": tc["id"], "type": "function",
                                    "function": {"arguments": tc["function"]["arguments"],
                                                 "name": tc["function"]["name"]}})
        return
    turn.flush()
    if isinstance(content, list):
        content = _parts(content)
    if role == "tool":
        turn.messages.append({"role": "tool", "content": content, "tool_call_id": m["tool_call_id"]})
    elif role in ("user", "system", "developer"):
        turn.messages.append({"role": role, "content": content})
    else:
        raise NotImplementedError(f"Unrecognized role for message: `{role}`")


def responses_to_chat(params: ResponseCreateParams) -> ChatCreateParams:
    p = dump(params, exclude_unset=True)
    turn = _Turn()
    inp = p.pop("input")
    if isinstance(inp, str):
        inp = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": inp}]}]
    for m in inp:
        if not m.get("type") and m.get("role"):
            m["type"] = "message"
        kind = m["type"]
        if kind == "message":
            _message(m, turn)
        elif kind == "reasoning":
            turn.pending = True
            if m.get("summary"):
                turn.content += think([s["text"] for s in m["summary"]])
        elif kind == "function_call":
            turn.pending = True
            turn.tool_calls.append({"id": m["call_id"], "type": "function",
                                    "function": {"arguments": m["arguments"], "name": m["name"]}})
        elif kind == "function_call_output":
            turn.flush()
            out = m["output"]
            if isinstance(out, list):
                bad = sorted({x.get("type", "<missing>") for x in out if x.get("type") != "input_text"})
                if bad:
                    raise NotImplementedError(f"function_call_output {m['call_id']!r}: cannot carry {bad}")
                out = [{"type": "text", "text": x["text"]} for x in out]
            turn.messages.append({"role": "tool", "content": out, "tool_call_id": m["call_id"]})
        else:
            raise NotImplementedError(f"{kind!r} has no Chat Completions representation")
    turn.flush()
    messages = turn.messages

    instructions = p.pop("instructions", None)
    if instructions:
        lead = [instructions]
        while messages and messages[0]["role"] in ("system", "developer"):
            lead.append(text_of(messages.pop(0)["content"]))
        messages.insert(0, {"role": "system", "content": "\n\n".join(lead)})

    max_output_tokens = p.pop("max_output_tokens", None)
    if max_output_tokens is not None:
        p["max_tokens"] = max_output_tokens
    reasoning = p.pop("reasoning", None)
    if reasoning is not None and reasoning.get("effort") is not None:
        p["reasoning_effort"] = reasoning["effort"]
    tools = p.pop("tools", None)
    if tools:
        p["tools"] = []
        for t in tools:
            t = {k: v for k, v in t.items() if k not in ("type", "strict")}
            p["tools"].append({"type": "function", "function": t})
        tc = p.get("tool_choice")
        if isinstance(tc, dict) and tc.get("type") == "function" and "name" in tc and "function" not in tc:
            # The Responses form of a forced function; Chat Completions nests the name.
            p["tool_choice"] = {"type": "function", "function": {"name": tc["name"]}}
    else:
        if p.get("tool_choice") == "required":
            raise ValueError("tool_choice='required' requires at least one tool")
        p.pop("tool_choice", None)
        p.pop("parallel_tool_calls", None)
    return ChatCreateParams(messages=messages, **p)


def preprocess(body: Dict[str, Any]) -> Dict[str, Any]:
    """The outbound body: upstream's _preprocess_chat_completion_create_params (the parts the
    benchmark's config reaches)."""
    body["model"] = CFG.model
    metadata = body.get("metadata") or {}
    ctk = deepcopy(CFG.chat_template_kwargs) if CFG.chat_template_kwargs else {}
    ctk.update(json.loads(metadata.get("chat_template_kwargs") or "{}"))
    if ctk:
        body["chat_template_kwargs"] = ctk
    extra = deepcopy(CFG.extra_body) if CFG.extra_body else {}
    extra.update(json.loads(metadata.get("extra_body") or "{}"))
    if CFG.uses_reasoning_parser:
        for m in body["messages"]:
            if m.get("role") != "assistant" or not isinstance(m.get("content"), str):
                continue
            found, rest = split_think(m["content"])
            m["content"] = rest
            if found and CFG.uses_interleaved_reasoning:
                m["reasoning_content"] = m["reasoning"] = found[0]
    if body.get("top_logprobs") is None:
        body.pop("top_logprobs", None)
    if extra:
        body = extra | body
    return body


# ----------------------------------------------------------------------------------------------
# The endpoint call (NeMoGymAsyncOpenAI.create_chat_completion over nemo_gym.server_utils.request)
# ----------------------------------------------------------------------------------------------


class UpstreamError(Exception):
    def __init__(self, status: int, content: bytes):
        super().__init__(f"{status}: {content[:200]!r}")
        self.status = status
        self.content = content


def _empty_completion(finish_reason: str) -> Dict[str, Any]:
    return {"id": "chtcmpl-123", "object": "chat.completion", "created": int(time.time()), "model": CFG.model,
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": None, "tool_calls": None}}]}


async def post_chat(body: Dict[str, Any]) -> Dict[str, Any]:
    import aiohttp

    from e2e_peer import client, dumps

    url = f"{CFG.base_url}/chat/completions"
    data = dumps(body)
    headers = {"Authorization": f"Bearer {CFG.api_key}", "Content-Type": "application/json"}
    tries, max_tries, errors = 0, MAX_NUM_TRIES, 0
    while True:
        try:
            resp = await client().request("POST", url, data=data, headers=headers)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            await asyncio.sleep(0.5)
            continue
        except Exception:
            errors += 1
            if errors >= MAX_NUM_TRIES:
                raise
            await asyncio.sleep(0.5)
            continue
        tries += 1
        if resp.status in RETRY_STATUSES and tries < max_tries:
            if resp.status in RATE_LIMIT_STATUSES:
                max_tries += 1
            await resp.read()
            await asyncio.sleep(0.5)
            continue
        content = await resp.read()
        if resp.status >= 400:
            text = content.decode(errors="replace")
            if resp.status == 400 and ("context length" in text or "max_tokens" in text):
                return _empty_completion("length")
            raise UpstreamError(resp.status, content)
        return json.loads(content)


async def chat_completion(body: Dict[str, Any]) -> ChatCompletion:
    return finish_chat(await post_chat(preprocess(body)))


def finish_chat(answer: Dict[str, Any]) -> ChatCompletion:
    msg = answer["choices"][0]["message"]
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    if CFG.uses_reasoning_parser:
        if reasoning:
            msg.pop("reasoning_content", None)
            msg.pop("reasoning", None)
            msg["content"] = think([reasoning]) + (msg.get("content") or "")
    elif reasoning:
        raise AssertionError(f"`{CFG.name}` has `uses_reasoning_parser: false`, but the endpoint answered "
                             "reasoning_content: do not run a reasoning parser in the endpoint, or fix the config")
    return load(ChatCompletion, answer)


# ----------------------------------------------------------------------------------------------
# Chat Completion -> Response
# ----------------------------------------------------------------------------------------------


def _count(v: Any) -> Optional[int]:
    return v if type(v) is int and v >= 0 else None


def _detail(usage: Dict[str, Any], group: str, name: str, *aliases: str) -> Optional[int]:
    v = _count((usage.get(group) or {}).get(name))
    for a in aliases:
        if v is not None:
            break
        v = _count(usage.get(a))
    return v


def output_items(message: ChatMessage) -> List[Any]:
    m = dump(message, exclude_none=True)
    out: List[Any] = []
    content = m.get("content") or ""
    found: List[str] = []
    if CFG.uses_reasoning_parser:
        found, content = split_think(content)
    if found:
        out.append(ReasoningItem(id=f"rs_{uuid4().hex}", type="reasoning",
                                 summary=[Summary(text=t, type="summary_text") for t in found]))
    tool_calls = m.get("tool_calls") or []
    if content or not (out or tool_calls):
        out.append(OutputMessage(id=f"msg_{uuid4().hex}", role="assistant", status="completed", type="message",
                                 content=[OutputText(type="output_text", text=content, annotations=[])]))
    for tc in tool_calls:
        out.append(FunctionToolCall(name=tc["function"]["name"], arguments=tc["function"]["arguments"],
                                    call_id=tc["id"], id=tc["id"], type="function_call", status="completed"))
    return out


def chat_to_response(params: ResponseCreateParams, cc: ChatCompletion) -> Response:
    choice = cc.choices[0]
    output = [dump(o) for o in output_items(choice.message)]
    usage = None
    if cc.usage:
        u = dump(cc.usage)
        usage = Usage(input_tokens=cc.usage.prompt_tokens, output_tokens=cc.usage.completion_tokens,
                      total_tokens=cc.usage.total_tokens,
                      input_tokens_details={"cached_tokens": _detail(u, "prompt_tokens_details", "cached_tokens",
                                                                     "cached_input_tokens", "cache_read_input_tokens")},
                      output_tokens_details={"reasoning_tokens": _detail(u, "completion_tokens_details",
                                                                         "reasoning_tokens", "reasoning_output_tokens")})
    incomplete = None
    if choice.finish_reason == "length":
        incomplete = {"reason": "max_output_tokens"}
    elif choice.finish_reason == "content_filter":
        incomplete = {"reason": "content_filter"}
    return Response(
        id=f"resp_{uuid4().hex}", created_at=cc.created, model=params.model, object="response", output=output,
        tool_choice=params.tool_choice if params.tool_choice is not None else "auto",
        parallel_tool_calls=params.parallel_tool_calls, tools=params.tools, temperature=params.temperature,
        top_p=params.top_p, background=params.background, max_output_tokens=params.max_output_tokens,
        max_tool_calls=params.max_tool_calls, previous_response_id=params.previous_response_id,
        prompt=params.prompt, reasoning=params.reasoning, service_tier=params.service_tier, text=params.text,
        top_logprobs=params.top_logprobs, truncation=params.truncation, metadata=params.metadata,
        instructions=params.instructions, user=params.user,
        status="incomplete" if incomplete is not None else "completed", incomplete_details=incomplete,
        usage=usage)


# ----------------------------------------------------------------------------------------------
# The app
# ----------------------------------------------------------------------------------------------


def _validate(model, body: Any):
    from fastapi.exceptions import RequestValidationError
    from pydantic.error_wrappers import ErrorWrapper

    try:
        return load(model, body)
    except ValidationError as e:  # a 422 naming the body's fields, as FastAPI answers a bad body
        raise RequestValidationError([ErrorWrapper(e, ("body",))])


def make_peer_app(port_holder: Dict[str, int]):
    from fastapi import Body, Request

    from e2e_peer import add_exception_middleware, make_app

    name = f"VLLMModel___{CFG.name}"
    app = make_app(name)

    @app.on_event("startup")
    async def announce() -> None:
        print(f"LISTENING {port_holder['port']}", flush=True)

    @app.post("/v1/responses")
    async def responses(request: Request, body: dict = Body()) -> Response:
        params = _validate(ResponseCreateParams, body)
        chat = responses_to_chat(params)
        params.model = CFG.model
        cc = await chat_completion(dump(chat, exclude_unset=True))
        return chat_to_response(params, cc)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request, body: dict = Body()) -> ChatCompletion:
        params = _validate(ChatCreateParams, body)
        return await chat_completion(dump(params, exclude_unset=True))

    # Like NeMo Gym's exception middleware; an endpoint error names its status and body.
    add_exception_middleware(app, name)
    return app


def serve(args) -> int:
    import uvicorn

    CFG.name, CFG.base_url, CFG.api_key, CFG.model = args.name, args.base_url.rstrip("/"), args.api_key, args.model
    CFG.uses_reasoning_parser = args.uses_reasoning_parser
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(2048)
    holder = {"port": sock.getsockname()[1]}
    config = uvicorn.Config(make_peer_app(holder), loop="uvloop", http="httptools", workers=1, access_log=False,
                            log_level="warning", timeout_keep_alive=30, backlog=2048)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def convert(args) -> int:
    CFG.model = args.model
    with open(args.body, encoding="utf-8") as f:
        params = load(ResponseCreateParams, json.load(f))
    body = preprocess(dump(responses_to_chat(params), exclude_unset=True))
    json.dump(body, sys.stdout, ensure_ascii=False, separators=(",", ":"))
    print()
    return 0


def time_calls(args) -> int:
    """The work of one proxied /v1/responses call that is not HTTP (JSON in and out, validation,
    conversion both ways, the Response model), best of 3 loops of N calls."""
    with open(args.body, "rb") as f:
        raw = f.read()
    answer = json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": CFG.model,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": "Hello"}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51}}).encode()
    as_json = (lambda r: r.model_dump_json()) if PYDANTIC_2 else (lambda r: r.json())

    def one() -> str:
        params = load(ResponseCreateParams, json.loads(raw))
        body = preprocess(dump(responses_to_chat(params), exclude_unset=True))
        json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        params.model = CFG.model
        return as_json(chat_to_response(params, finish_chat(json.loads(answer))))

    out = json.loads(one())
    for _ in range(max(args.n // 10, 1)):
        one()
    best = float("inf")
    for _ in range(3):  # CPU time of this process, so that other work on the machine counts less
        t = time.process_time()
        for _ in range(args.n):
            one()
        best = min(best, (time.process_time() - t) / args.n)
    core = ""
    if PYDANTIC_2:
        import pydantic_core

        core = f" (pydantic-core {pydantic_core.__version__})"
    print(f"pydantic {pydantic.VERSION}{core}, Python {sys.version.split()[0]}: {best * 1e6:.0f} us per call "
          f"of CPU (validate, convert, build and dump; output {[o['type'] for o in out['output']]})")
    return 0


def main() -> int:
    import argparse

    if len(sys.argv) > 1 and sys.argv[1] in ("convert", "time"):
        cmd = sys.argv[1]
        ap = argparse.ArgumentParser(prog=f"vllm_peer.py {cmd}")
        ap.add_argument("body", help="a Responses create-params body (JSON file)")
        if cmd == "time":
            ap.add_argument("n", type=int, nargs="?", default=500, help="calls per timed loop")
        ap.add_argument("--model", default=Settings.model)
        args = ap.parse_args(sys.argv[2:])
        CFG.model = args.model
        return convert(args) if cmd == "convert" else time_calls(args)
    ap = argparse.ArgumentParser(description="Python peer of gym-cpp's vllm_model (FastAPI + aiohttp)")
    ap.add_argument("--port", type=int, required=True, help="port to listen on (0: a free one)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--base-url", required=True, help="the OpenAI-compatible endpoint, e.g. http://127.0.0.1:N/v1")
    ap.add_argument("--api-key", default=Settings.api_key)
    ap.add_argument("--model", default=Settings.model)
    ap.add_argument("--name", default=Settings.name, help="the server's name (session cookie, messages)")
    ap.add_argument("--uses-reasoning-parser", action="store_true",
                    help="the endpoint runs a reasoning parser (reasoning_content); <think> spans become reasoning items")
    return serve(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
