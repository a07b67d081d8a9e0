"""FastAPI peers of bench/json_route_server.cpp for bench/http_load.sh: one app, two routes.

POST /verify        the bare peer: `await request.json()`, no model.
POST /verify_typed  the NeMo Gym-shaped peer: the body is declared as pydantic models with the
                    structure of a NeMo Gym resources server's /verify request (Responses create
                    params + the Response), so FastAPI validates the whole row
                    into typed models on every request, as a NeMo Gym server does.

Both read `response.output` and `reward` and answer {"reward": R, "items": N} (reward 1.0 when
absent). Run (as http_load.sh does):
  /usr/bin/python3 -m uvicorn fastapi_app:app --app-dir bench --loop uvloop --http httptools \
      --workers 1 --log-level warning --no-access-log --backlog 8192

The models work under pydantic 1.10 (what Debian's python3-fastapi 0.92 runs on) and pydantic 2.
Without FastAPI installed only the models load, for the two commands below:
  python3 bench/fastapi_app.py check BODY.json       validate BODY with the /verify_typed models
                                                     and print the answer the route would give
  python3 bench/fastapi_app.py time BODY.json [N]    microseconds per validation of BODY (the
                                                     parsed dict, as FastAPI hands it over)
"""
import json
import sys
import time
from typing import Any, Dict, List, Literal, Optional, Union

import pydantic
from pydantic import BaseModel, Field

try:
    from typing import Annotated
except ImportError:  # Python < 3.9
    from typing_extensions import Annotated

try:
    from fastapi import FastAPI, Request
except ModuleNotFoundError:  # models only (`check` / `time` under an interpreter without FastAPI)
    FastAPI = Request = None

PYDANTIC_V2 = int(pydantic.VERSION.split(".")[0]) >= 2


# Open models keep keys they do not name (rows may carry token ids or newer API fields); Closed
# models reject them (create params are validated strictly, as NeMo Gym's model servers do).
if PYDANTIC_V2:
    from pydantic import ConfigDict

    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")

    class Closed(BaseModel):
        model_config = ConfigDict(extra="forbid")

else:

    class Open(BaseModel):
        class Config:
            extra = "allow"

    class Closed(BaseModel):
        class Config:
            extra = "forbid"


def _one_of(*models: type) -> Any:
    """A union of item models told apart by their `type` field."""
    return Annotated[Union[models], Field(discriminator="type")]


# --- content parts -------------------------------------------------------------------------
class InputText(Open):
    type: Literal["input_text"]
    text: str


class InputImage(Open):
    type: Literal["input_image"]
    image_url: Optional[str] = None
    file_id: Optional[str] = None
    detail: Optional[Literal["low", "high", "auto"]] = "auto"


class InputVideo(Open):
    type: Literal["input_video"]
    video_url: Union[str, Dict[str, Any]]


InputPart = _one_of(InputText, InputImage, InputVideo)


class TopLogprob(Open):
    token: str
    logprob: float
    bytes: Optional[List[int]] = None


class Logprob(Open):
    token: str
    logprob: float
    bytes: Optional[List[int]] = None
    top_logprobs: List[TopLogprob] = Field(default_factory=list)


class OutputText(Open):
    type: Literal["output_text"]
    text: str
    annotations: List[Dict[str, Any]] = Field(default_factory=list)
    logprobs: Optional[List[Logprob]] = None


class Refusal(Open):
    type: Literal["refusal"]
    refusal: str


class SummaryText(Open):
    type: Literal["summary_text"]
    text: str


class ReasoningText(Open):
    type: Literal["reasoning_text"]
    text: str


# --- items (input and output) --------------------------------------------------------------
ItemStatus = Optional[Literal["in_progress", "completed", "incomplete"]]


class InputMessage(Open):
    role: Literal["user", "assistant", "system", "developer"]
    content: Union[str, List[InputPart]]
    type: Optional[Literal["message"]] = None  # optional on input items


class OutputMessage(Open):
    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    status: Literal["in_progress", "completed", "incomplete"]
    content: List[_one_of(OutputText, Refusal)]


class FunctionCall(Open):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str  # JSON text
    id: Optional[str] = None
    status: ItemStatus = None


class FunctionCallOutput(Open):
    type: Literal["function_call_output"]
    call_id: str
    output: Union[str, List[InputText]]
    id: Optional[str] = None
    status: ItemStatus = None


class Reasoning(Open):
    type: Literal["reasoning"]
    id: str
    summary: List[SummaryText]
    encrypted_content: Optional[str] = None
    content: Optional[List[ReasoningText]] = None
    status: ItemStatus = None


# Input items may omit `type` (an easy input message), so they are a plain union tried member by
# member; output items must carry `type`, so they are told apart by it.
InputItem = Union[InputMessage, OutputMessage, FunctionCall, FunctionCallOutput, Reasoning]
OutputItem = _one_of(OutputMessage, FunctionCall, FunctionCallOutput, Reasoning)


# --- tools, options ------------------------------------------------------------------------
class FunctionTool(Open):
    type: Literal["function"]
    name: str
    description: Optional[str] = None
    parameters: Optional[Dict[str, Any]] = None  # a JSON Schema, kept as given
    strict: Optional[bool] = None


ToolChoice = Union[Literal["none", "auto", "required"], Dict[str, Any]]
ServiceTier = Optional[Literal["auto", "default", "flex", "scale", "priority"]]
Truncation = Optional[Literal["auto", "disabled"]]


class ReasoningConfig(Open):
    effort: Optional[str] = None
    summary: Optional[Literal["auto", "concise", "detailed"]] = None
    generate_summary: Optional[Literal["auto", "concise", "detailed"]] = None


class FormatText(Open):
    type: Literal["text"]


class FormatJsonObject(Open):
    type: Literal["json_object"]


class FormatJsonSchema(Open):
    type: Literal["json_schema"]
    name: str
    schema_: Dict[str, Any] = Field(alias="schema")
    description: Optional[str] = None
    strict: Optional[bool] = None


class TextConfig(Open):
    format: Optional[_one_of(FormatText, FormatJsonObject, FormatJsonSchema)] = None
    verbosity: Optional[Literal["low", "medium", "high"]] = None


# --- the /verify body ----------------------------------------------------------------------
class CreateParams(Closed):
    """Responses create params, non-streaming: NeMo Gym's fields and defaults.

    parallel_tool_calls and tool_choice also accept null (stored rows carry null there)."""

    background: Optional[bool] = None
    include: Optional[List[str]] = None
    input: Union[str, List[InputItem]]
    instructions: Optional[str] = None
    max_output_tokens: Optional[int] = None
    max_tool_calls: Optional[int] = None
    metadata: Optional[Dict[str, str]] = None
    model: Optional[str] = None
    parallel_tool_calls: Optional[bool] = True
    previous_response_id: Optional[str] = None
    prompt: Optional[Dict[str, Any]] = None
    reasoning: Optional[ReasoningConfig] = None
    service_tier: ServiceTier = None
    store: Optional[bool] = None
    temperature: Optional[float] = None
    text: Optional[TextConfig] = None
    tool_choice: Optional[ToolChoice] = "auto"
    tools: List[FunctionTool] = Field(default_factory=list)
    top_logprobs: Optional[int] = None
    top_p: Optional[float] = None
    truncation: Truncation = None
    user: Optional[str] = None
    stream: Optional[Literal[False]] = None


class InputTokensDetails(Open):
    cached_tokens: Optional[int] = None


class OutputTokensDetails(Open):
    reasoning_tokens: Optional[int] = None


class Usage(Open):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class ResponseError(Open):
    code: str
    message: str


class IncompleteDetails(Open):
    reason: Optional[Literal["max_output_tokens", "content_filter"]] = None


class ResponseObject(Open):
    """A Responses API `response` object."""

    id: str
    created_at: float
    model: str
    object: Literal["response"]
    output: List[OutputItem]
    parallel_tool_calls: bool
    tool_choice: ToolChoice
    tools: List[FunctionTool]
    error: Optional[ResponseError] = None
    incomplete_details: Optional[IncompleteDetails] = None
    instructions: Optional[Union[str, List[InputItem]]] = None
    metadata: Optional[Dict[str, str]] = None
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    background: Optional[bool] = None
    max_output_tokens: Optional[int] = None
    max_tool_calls: Optional[int] = None
    previous_response_id: Optional[str] = None
    prompt: Optional[Dict[str, Any]] = None
    prompt_cache_key: Optional[str] = None
    reasoning: Optional[ReasoningConfig] = None
    safety_identifier: Optional[str] = None
    service_tier: ServiceTier = None
    status: Optional[Literal["completed", "failed", "in_progress", "cancelled", "queued", "incomplete"]] = None
    text: Optional[TextConfig] = None
    top_logprobs: Optional[int] = None
    truncation: Truncation = None
    user: Optional[str] = None
    usage: Optional[Usage] = None


class VerifyRequest(Open):
    """The /verify body: create params and the response; a stored row also carries `reward`."""

    responses_create_params: CreateParams
    response: ResponseObject


class VerifyAnswer(BaseModel):
    reward: float
    items: int


def _reward(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return 1.0


def answer_typed(body: VerifyRequest) -> VerifyAnswer:
    return VerifyAnswer(reward=_reward(getattr(body, "reward", None)), items=len(body.response.output))


def _dump(model: BaseModel, **kw: Any) -> Dict[str, Any]:
    return model.model_dump(**kw) if PYDANTIC_V2 else model.dict(**kw)


def validate(data: Any) -> VerifyRequest:
    return VerifyRequest.model_validate(data) if PYDANTIC_V2 else VerifyRequest.parse_obj(data)


# --- the app -------------------------------------------------------------------------------
if FastAPI is not None:
    app = FastAPI()

    @app.post("/verify")
    async def verify(request: Request) -> dict:
        body = await request.json()
        items = 0
        reward = 1.0
        if isinstance(body, dict):
            response = body.get("response")
            if isinstance(response, dict) and isinstance(response.get("output"), list):
                items = len(response["output"])
            reward = _reward(body.get("reward"))
        return {"reward": reward, "items": items}

    @app.post("/verify_typed")
    async def verify_typed(body: VerifyRequest) -> VerifyAnswer:
        return answer_typed(body)


# --- models-only commands ------------------------------------------------------------------
def _main(argv: List[str]) -> int:
    usage = "usage: fastapi_app.py check BODY.json | time BODY.json [N]"
    if len(argv) < 2 or argv[0] not in ("check", "time") or (argv[0] == "check" and len(argv) != 2):
        print(usage, file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        data = json.load(f)
    if argv[0] == "check":
        body = validate(data)
        dump = _dump(body, by_alias=True, exclude_unset=True)
        kinds = [type(item).__name__ for item in body.response.output]
        same = "yes" if dump == data else "NO"
        print(f"pydantic {pydantic.VERSION}: valid; output items {kinds}; "
              f"the model dump (set fields only) equals the body: {same}")
        print(json.dumps(_dump(answer_typed(body)), separators=(",", ":")))
        return 0 if same == "yes" else 1
    n = int(argv[2]) if len(argv) > 2 else 2000
    validate(data)  # warm up (and fail loudly on an invalid body)
    best = float("inf")
    for _ in range(5):  # the best of 5 batches: the least disturbed by other work on the machine
        start = time.perf_counter()
        for _ in range(n):
            validate(data)
        best = min(best, (time.perf_counter() - start) / n)
    if PYDANTIC_V2:
        import pydantic_core

        core = f"pydantic-core {pydantic_core.__version__}"
    else:
        core = "compiled" if pydantic.compiled else "pure Python"
    print(f"pydantic {pydantic.VERSION} ({core}), Python {sys.version.split()[0]}: "
          f"{best * 1e6:.1f} us per validation")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
