"""Pydantic models shaped like NeMo Gym's Responses API types (`nemo_gym.openai_utils`), for the
FastAPI peers of bench/ (bench/mcqa_fastapi.py, bench/e2e_peer.py).

The structure of NeMo Gym 0.7.0's create params (strict: unknown keys are rejected), input and
output items (the subset a text environment sees), function tools, usage and the Response envelope
(unknown keys kept, as the OpenAI SDK models NeMo Gym derives it from keep them), restated, not
copied. Written for the pydantic 1.10 of Debian's python3 (what the peers run on); the models also
load on pydantic 2 (the `time` commands of the peers use that to compare with NeMo Gym's pydantic).
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Union

import pydantic
from pydantic import BaseModel, Field

PYDANTIC_2 = int(pydantic.VERSION.split(".")[0]) >= 2
if PYDANTIC_2:  # only for the `time` command below; the served peer runs on pydantic 1
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", module="pydantic")
from pydantic import validator  # noqa: E402 (v1 API, deprecated but kept by pydantic 2)

# ----------------------------------------------------------------------------------------------
# Request / response models (the structure of nemo_gym.openai_utils and base_resources_server)
# ----------------------------------------------------------------------------------------------


class _Forbid(BaseModel):
    class Config:
        extra = "forbid"


class _Allow(BaseModel):
    # The OpenAI SDK models NeMo Gym derives Response from keep unknown fields.
    class Config:
        extra = "allow"


class InputText(BaseModel):
    text: str
    type: Literal["input_text"]


class InputImage(BaseModel):
    detail: Literal["low", "high", "auto"] = "auto"
    type: Literal["input_image"]
    file_id: Optional[str] = None
    image_url: Optional[str] = None


class InputFile(BaseModel):
    type: Literal["input_file"]
    file_data: Optional[str] = None
    file_id: Optional[str] = None
    file_url: Optional[str] = None
    filename: Optional[str] = None


InputContent = Union[InputText, InputImage, InputFile]


class EasyInputMessage(BaseModel):
    content: Union[str, List[InputContent]]
    role: Literal["user", "assistant", "system", "developer"]
    type: Literal["message"] = "message"


class InputMessage(BaseModel):
    content: List[InputContent]
    role: Literal["user", "system", "developer"]
    status: Literal["in_progress", "completed", "incomplete"] = "completed"
    type: Literal["message"] = "message"


class OutputText(BaseModel):
    annotations: List[Dict[str, Any]]
    text: str
    type: Literal["output_text"] = "output_text"
    logprobs: Optional[List[Dict[str, Any]]] = None


class OutputRefusal(BaseModel):
    refusal: str
    type: Literal["refusal"] = "refusal"


class OutputMessage(BaseModel):
    id: str
    content: List[Union[OutputText, OutputRefusal]]
    role: Literal["assistant"] = "assistant"
    status: Literal["in_progress", "completed", "incomplete"] = "completed"
    type: Literal["message"] = "message"


class FunctionToolCall(BaseModel):
    arguments: str
    call_id: str
    name: str
    type: Literal["function_call"] = "function_call"
    id: Optional[str] = None
    status: Optional[Literal["in_progress", "completed", "incomplete"]] = None


class FunctionCallOutput(BaseModel):
    call_id: str
    output: Union[str, List[Dict[str, Any]]]
    type: Literal["function_call_output"] = "function_call_output"
    id: Optional[str] = None
    status: Optional[Literal["in_progress", "completed", "incomplete"]] = None


class Summary(BaseModel):
    text: str
    type: Literal["summary_text"] = "summary_text"


class ReasoningContent(BaseModel):
    text: str
    type: Literal["reasoning_text"] = "reasoning_text"


class ReasoningItem(BaseModel):
    id: str
    summary: List[Summary]
    type: Literal["reasoning"] = "reasoning"
    encrypted_content: Optional[str] = None
    content: Optional[List[ReasoningContent]] = None


# NeMo Gym's input-item union (the subset a text environment sees), tried in order.
InputItem = Union[
    EasyInputMessage, InputMessage, OutputMessage, FunctionToolCall, FunctionCallOutput, ReasoningItem
]
# Output items: the same union, but an item must say its `type` (as NeMo Gym requires).
OutputItem = Union[
    OutputMessage, FunctionToolCall, FunctionCallOutput, ReasoningItem, EasyInputMessage, InputMessage
]


class FunctionToolParam(BaseModel):
    name: str
    parameters: Optional[Dict[str, Any]] = None
    strict: Optional[bool] = None
    type: Literal["function"] = "function"
    description: Optional[str] = None


class Reasoning(BaseModel):
    effort: Optional[Literal["minimal", "low", "medium", "high"]] = None
    generate_summary: Optional[Literal["auto", "concise", "detailed"]] = None
    summary: Optional[Literal["auto", "concise", "detailed"]] = None


ToolChoice = Union[Literal["none", "auto", "required"], Dict[str, Any]]


class ResponseCreateParams(_Forbid):
    background: Optional[bool] = None
    include: Optional[List[str]] = None
    input: Union[str, List[InputItem]]
    instructions: Optional[str] = None
    max_output_tokens: Optional[int] = None
    max_tool_calls: Optional[int] = None
    metadata: Optional[Dict[str, str]] = None
    model: Optional[str] = None
    parallel_tool_calls: bool = True
    previous_response_id: Optional[str] = None
    prompt: Optional[Dict[str, Any]] = None
    reasoning: Optional[Reasoning] = None
    service_tier: Optional[Literal["auto", "default", "flex", "scale", "priority"]] = None
    store: Optional[bool] = None
    temperature: Optional[float] = None
    text: Optional[Dict[str, Any]] = None
    tool_choice: ToolChoice = "auto"
    tools: List[Union[FunctionToolParam, Dict[str, Any]]] = Field(default_factory=list)
    top_logprobs: Optional[int] = None
    top_p: Optional[float] = None
    truncation: Optional[Literal["auto", "disabled"]] = None
    user: Optional[str] = None
    stream: Optional[Literal[False]] = None


class InputTokensDetails(BaseModel):
    cached_tokens: Optional[int]


class OutputTokensDetails(BaseModel):
    reasoning_tokens: Optional[int]


class Usage(_Allow):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class Response(_Allow):
    id: str
    created_at: float
    error: Optional[Dict[str, Any]] = None
    incomplete_details: Optional[Dict[str, Any]] = None
    instructions: Union[str, List[InputItem], None] = None
    metadata: Optional[Dict[str, str]] = None
    model: str
    object: Literal["response"]
    output: List[OutputItem]
    parallel_tool_calls: bool
    temperature: Optional[float] = None
    tool_choice: ToolChoice
    tools: List[Union[FunctionToolParam, Dict[str, Any]]]
    top_p: Optional[float] = None
    background: Optional[bool] = None
    max_output_tokens: Optional[int] = None
    max_tool_calls: Optional[int] = None
    previous_response_id: Optional[str] = None
    prompt: Optional[Dict[str, Any]] = None
    prompt_cache_key: Optional[str] = None
    reasoning: Optional[Reasoning] = None
    safety_identifier: Optional[str] = None
    service_tier: Optional[Literal["auto", "default", "flex", "scale", "priority"]] = None
    status: Optional[Literal["completed", "failed", "in_progress", "cancelled", "queued", "incomplete"]] = None
    text: Optional[Dict[str, Any]] = None
    top_logprobs: Optional[int] = None
    truncation: Optional[Literal["auto", "disabled"]] = None
    usage: Optional[Usage] = None
    user: Optional[str] = None

    @validator("output", pre=True, each_item=True)
    def _output_item_has_type(cls, v):  # noqa: N805 (pydantic validator)
        if isinstance(v, dict) and "type" not in v:
            raise ValueError("Responses API output items must include a type discriminator")
        return v

    @property
    def output_text(self) -> str:
        # The OpenAI SDK's definition (docs/design/conformance.md#text-views-of-a-response): a
        # `message` whose content is a plain string makes it fail, and the request answers 500, as
        # upstream does.
        texts = []
        for item in self.output:
            if item.type == "message":
                if isinstance(item.content, str):
                    raise AttributeError("'str' object has no attribute 'type'")
                for part in item.content:
                    if part.type == "output_text":
                        texts.append(part.text)
        return "".join(texts)
