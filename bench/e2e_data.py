"""Data for bench/e2e_load.sh: N distinct `example_single_tool_call` tasks and their recorded rollouts.

  python3 bench/e2e_data.py --out-dir DIR [--name NAME] [--tasks N]

writes

- `DIR/NAME.jsonl`: N input rows shaped like the environment's `example.jsonl` rows
  (environments/example_single_tool_call/README.md): `responses_create_params` only, with the
  developer message, a user message asking about the weather in a synthetic city (all N cities
  distinct, so all N inputs are distinct), and the `get_weather` tool with `strict: true`; no
  `type` on the messages, no verifier fields, no `agent_ref`.
- `DIR/NAME_rollouts.jsonl`: one recorded rollout per task in NeMo Gym's rollout format:
  `responses_create_params` as NeMo Gym records it (every create-params field, messages with
  `"type": "message"`), `response` = a Response envelope whose `output` is the whole trajectory
  -- a `get_weather` `function_call`, its `function_call_output` (the resources server's compact
  answer) and a final assistant message -- with `usage`, then `reward` 1.0, `_ng_task_index`,
  `_ng_rollout_index` and `agent_ref`.

`replay_model` with an empty `rollouts_jsonl_fpaths` loads `NAME_rollouts.jsonl` beside
`input_jsonl_fpath` (docs/reference/replay-model.md), and replays every task: turn 1 (input = the
row's two messages, continuation empty) answers the `function_call`; turn 2 (continuation = that
call plus the tool output, which ends with a `function_call_output`; the next recorded item is a
message) answers the final message with the recorded usage. The call id, name and arguments are
echoed by the agent unchanged, and the tool output is equal to the recorded one (as JSON and as
text), so every rollout replays with `tool_output_check` semantic or exact, and reward 1.0.

Deterministic: the same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

DEVELOPER = ("You are a helpful personal assistant that aims to be helpful and reduce any pain points "
             "the user has.")
TOOL = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": ""}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
    "type": "function",
    "description": "",
}
QUESTIONS = (
    "what's it like in {city}?",
    "going out in {city} tonight, what's the weather?",
    "is it cold in {city} right now?",
    "weather in {city} please",
    "should I bring a jacket in {city}?",
    "how's the weather looking in {city} today?",
)
ANSWERS = (
    "The weather in {city} is cold right now. You might want to bring a warm jacket.",
    "It's cold in {city} at the moment, so dress in layers if you're heading out.",
    "Right now it's cold in {city}. A coat and a scarf would be a good idea!",
    "{city} is cold today. If you need more details, just let me know.",
)
# Synthetic city names: prefix + root + suffix gives 16 * 16 * 8 = 2048 names; a number is
# appended beyond that, so any N gives N distinct cities.
PREFIXES = ("", "North ", "South ", "East ", "West ", "New ", "Old ", "Upper ", "Lower ", "Port ",
            "Fort ", "Lake ", "Mount ", "Glen ", "Saint ", "Little ")
ROOTS = ("Alder", "Birch", "Cedar", "Dun", "Elm", "Fair", "Gran", "Hazel", "Iron", "Juniper", "Kings",
         "Lin", "Maple", "Oak", "Pine", "Raven")
SUFFIXES = ("ford", "field", "haven", "brook", "ton", "wood", "ridge", "vale")

CREATE_PARAMS_DEFAULTS = {  # docs/design/wire-compatibility.md#responses-api-shapes, upstream order
    "background": None, "include": None, "input": None, "instructions": None,
    "max_output_tokens": None, "max_tool_calls": None, "metadata": None, "model": None,
    "parallel_tool_calls": True, "previous_response_id": None, "prompt": None, "reasoning": None,
    "service_tier": None, "store": None, "temperature": None, "text": None, "tool_choice": "auto",
    "tools": [], "top_logprobs": None, "top_p": None, "truncation": None, "user": None,
    "stream": None,
}
AGENT = "example_single_tool_call_simple_agent"


def city(i: int) -> str:
    n = len(PREFIXES) * len(ROOTS) * len(SUFFIXES)
    j = i % n
    name = (PREFIXES[j // (len(ROOTS) * len(SUFFIXES))] + ROOTS[(j // len(SUFFIXES)) % len(ROOTS)]
            + SUFFIXES[j % len(SUFFIXES)])
    return name if i < n else f"{name} {i // n + 1}"


def token(kind: str, i: int, n: int) -> str:
    return hashlib.sha256(f"{kind}:{i}".encode()).hexdigest()[:n]


def words(text: str) -> int:
    return len(text.split())


def task(i: int) -> tuple[dict, dict]:
    c = city(i)
    question = QUESTIONS[i % len(QUESTIONS)].format(city=c)
    answer = ANSWERS[i % len(ANSWERS)].format(city=c)
    messages = [{"content": DEVELOPER, "role": "developer"}, {"content": question, "role": "user"}]
    row = {"responses_create_params": {"input": messages, "tools": [TOOL]}}

    recorded_params = dict(CREATE_PARAMS_DEFAULTS)
    recorded_params["input"] = [dict(m, type="message") for m in messages]
    recorded_params["tools"] = [TOOL]
    call_id = "call_" + token("call", i, 24)
    resp_hex = token("resp", i, 48)
    tool_output = json.dumps({"city": c, "weather_description": f"The weather in {c} is cold."},
                             ensure_ascii=False, separators=(",", ":"))
    output = [
        {"arguments": json.dumps({"city": c}, separators=(",", ":")), "call_id": call_id,
         "name": "get_weather", "type": "function_call", "id": "fc_" + token("fc", i, 48),
         "status": "completed"},
        {"call_id": call_id, "output": tool_output, "type": "function_call_output"},
        {"id": "msg_" + token("msg", i, 48),
         "content": [{"annotations": [], "text": answer, "type": "output_text", "logprobs": []}],
         "role": "assistant", "status": "completed", "type": "message"},
    ]
    # Rough token counts (two model calls: the second one re-reads the first turn and the tool output).
    first_in = 60 + words(question)
    input_tokens = first_in + first_in + 20 + words(tool_output)
    output_tokens = 18 + words(answer)
    response = {
        "id": "resp_" + resp_hex,
        "created_at": 1756074069.0 + i,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "model": "gpt-4.1-2025-04-14",
        "object": "response",
        "output": output,
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [dict(TOOL, description=None)],
        "top_p": 1.0,
        "background": False,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "previous_response_id": None,
        "prompt": None,
        "reasoning": {"effort": None, "generate_summary": None, "summary": None},
        "service_tier": "default",
        "status": "completed",
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "top_logprobs": 0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
        "user": None,
        "prompt_cache_key": None,
        "safety_identifier": None,
        "store": True,
    }
    rollout = {
        "responses_create_params": recorded_params,
        "response": response,
        "reward": 1.0,
        "_ng_task_index": i,
        "_ng_rollout_index": 0,
        "agent_ref": {"type": "responses_api_agents", "name": AGENT},
    }
    return row, rollout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--name", default="weather")
    ap.add_argument("--tasks", type=int, default=2048)
    args = ap.parse_args()
    if args.tasks < 1:
        sys.exit("--tasks must be >= 1")
    os.makedirs(args.out_dir, exist_ok=True)
    inputs = os.path.join(args.out_dir, f"{args.name}.jsonl")
    rollouts = os.path.join(args.out_dir, f"{args.name}_rollouts.jsonl")
    dump = lambda o: json.dumps(o, ensure_ascii=False)  # noqa: E731 (spaced, as NeMo Gym's files)
    with open(inputs, "w", encoding="utf-8") as fi, open(rollouts, "w", encoding="utf-8") as fr:
        for i in range(args.tasks):
            row, rollout = task(i)
            fi.write(dump(row) + "\n")
            fr.write(dump(rollout) + "\n")
    print(f"{inputs}: {args.tasks} tasks ({os.path.getsize(inputs)} bytes); "
          f"{rollouts}: {os.path.getsize(rollouts)} bytes")


if __name__ == "__main__":
    main()
