"""A resources server for gym-cpp written in Python, as NeMo Gym's are.

gym-cpp starts it like NeMo Gym's `ng_run` does (docs/guides/adding-an-environment.md): in this
folder, with `.venv/bin/python` when that venv exists, else `python3`, and the merged config in
the environment (`NEMO_GYM_CONFIG_DICT`, YAML) plus this instance's name (`NEMO_GYM_CONFIG_PATH`).
It needs only FastAPI, uvicorn, PyYAML and itsdangerous (Debian: python3-fastapi python3-uvicorn
python3-yaml python3-itsdangerous); it does not import nemo_gym, so it is also a template of the
wire protocol itself.

The environment: arithmetic word problems with a calculator tool. The reward is 1.0 when the last
number of the final answer equals `expected_answer`. The calculator counts its calls per session
(the session cookie the agent carries from /seed_session through the tool calls to /verify), and
/verify reports that count.
"""

import ast
import math
import operator
import os
import re
import secrets
import statistics

import uvicorn
import yaml
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.middleware.sessions import SessionMiddleware

CLASS_NAME = "PythonExampleResourcesServer"  # the session cookie is <class name>___<instance>


def load_instance_config():
    """This instance's block of the merged config: {host, port, domain, ...}."""
    config = yaml.safe_load(os.environ["NEMO_GYM_CONFIG_DICT"])
    name = os.environ["NEMO_GYM_CONFIG_PATH"]
    (server_type, impls), = config[name].items()
    (impl, block), = impls.items()
    return name, block


# ---- the calculator tool ---------------------------------------------------------------------

OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def evaluate(node):
    """Numbers and + - * / ** % and parentheses only: never eval() what a model wrote."""
    if isinstance(node, ast.Expression):
        return evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left, right = evaluate(node.left), evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        return OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](evaluate(node.operand))
    raise ValueError("only numbers, + - * / ** % and parentheses are allowed")


# ---- verify ----------------------------------------------------------------------------------

NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")


def assistant_text(response):
    """The text of the assistant's messages in the response's output, in order."""
    parts = []
    for item in response.get("output", []):
        if item.get("type") == "message" and item.get("role") == "assistant":
            content = item.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


def last_number(text):
    found = NUMBER.findall(text)
    return float(found[-1].replace(",", "")) if found else None


# ---- aggregate metrics: NeMo Gym's default computation (docs/reference/aggregate-metrics.md) ----

STATS = ("mean", "max", "min", "median", "std")


def numeric_record(row):
    record = {}
    for key, value in row.items():
        if key in ("_ng_task_index", "_ng_rollout_index"):
            continue
        if isinstance(value, bool):
            record[key] = float(value)
        elif isinstance(value, (int, float)):
            record[key] = value
    usage = (row.get("response") or {}).get("usage") or {}
    for key, value in usage.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            record[key] = value
    return record


def statistics_of(records):
    fields = []
    for record in records:
        fields.extend(k for k in record if k not in fields)
    values = {f: [float(r[f]) for r in records if f in r] for f in fields}
    out = {}
    for stat in STATS:
        for f in fields:
            v = values[f]
            if stat == "mean":
                out[f"mean/{f}"] = sum(v) / len(v)
            elif stat == "max":
                out[f"max/{f}"] = max(v)
            elif stat == "min":
                out[f"min/{f}"] = min(v)
            elif stat == "median":
                out[f"median/{f}"] = float(statistics.median(v))
            elif len(v) > 1:
                out[f"std/{f}"] = statistics.stdev(v)
    if not any(k.startswith("std/") for k in out):  # one row: no std is defined anywhere
        for f in fields:
            if len(values[f]) == len(records):
                out[f"std/{f}"] = 0.0
        out = {k: out[k] for s in STATS for k in out if k.startswith(s + "/")}
    return out


def aggregate(rows):
    seen = set()
    by_task = {}
    for row in rows:
        key = (row.get("_ng_task_index", 0), row.get("_ng_rollout_index", 0))
        if key in seen:
            raise ValueError(f"duplicate (task, rollout) pair {key}")
        seen.add(key)
        by_task.setdefault(key[0], []).append((key[1], row))
    agent_metrics = statistics_of([numeric_record(r) for r in rows])
    groups = []
    for task in sorted(by_task):
        rollouts = sorted(by_task[task], key=lambda pair: pair[0])
        group = {"_ng_task_index": task}
        group.update(statistics_of([numeric_record(r) for _, r in rollouts]))
        infos = []
        for rollout, row in rollouts:
            info = {"rollout_id": f"{task}:{rollout}", "_ng_task_index": task,
                    "_ng_rollout_index": rollout}
            info.update({k: v for k, v in numeric_record(row).items()})
            infos.append(info)
        group.update({"sample": {"agent_ref": {"name": "agent"}}, "num_rollouts": len(rollouts),
                      "expected_num_rollouts": len(rollouts), "missing_num_rollouts": 0,
                      "reward_profile_completion_pct": 100.0, "rollout_infos": infos})
        groups.append(group)
    key_metrics = {k: v for k, v in agent_metrics.items() if k.startswith("mean/")}
    return {"group_level_metrics": groups, "agent_metrics": agent_metrics,
            "key_metrics": key_metrics}


# ---- the app ---------------------------------------------------------------------------------

def build_app(instance_name):
    app = FastAPI()
    # Sign cookies with the deployment's key when gym-cpp gives one (all workers agree on it).
    key = os.environ.get("GYM_SESSION_SIGNING_KEY") or secrets.token_hex(32)
    app.add_middleware(SessionMiddleware, secret_key=key,
                       session_cookie=f"{CLASS_NAME}___{instance_name}")

    @app.get("/")
    async def health():
        return {"status": "ok"}

    @app.post("/seed_session")
    async def seed_session(request: Request):
        request.session["calculator_calls"] = 0
        return {}

    @app.post("/calculate")
    async def calculate(request: Request):
        body = await request.json()
        request.session["calculator_calls"] = request.session.get("calculator_calls", 0) + 1
        expression = body.get("expression") if isinstance(body, dict) else None
        if not isinstance(expression, str):
            return {"error": "give the expression as a string, e.g. {\"expression\": \"12*7\"}"}
        try:
            value = evaluate(ast.parse(expression, mode="eval"))
        except (SyntaxError, ValueError, ZeroDivisionError, OverflowError) as error:
            return {"error": str(error)}
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return {"result": value}

    @app.post("/verify")
    async def verify(request: Request):
        body = await request.json()
        if not isinstance(body, dict) or not isinstance(body.get("response"), dict) \
                or not isinstance(body.get("responses_create_params"), dict):
            return JSONResponse(status_code=422, content={"detail": "need responses_create_params "
                                                          "and response objects"})
        expected = body.get("expected_answer")
        if not isinstance(expected, (int, float)) or isinstance(expected, bool):
            return JSONResponse(status_code=422,
                                content={"detail": "expected_answer must be a number"})
        extracted = last_number(assistant_text(body["response"]))
        correct = extracted is not None and math.isclose(extracted, expected, rel_tol=0,
                                                         abs_tol=1e-9)
        return {
            "responses_create_params": body["responses_create_params"],
            "response": body["response"],
            "reward": 1.0 if correct else 0.0,
            "expected_answer": expected,
            "extracted_answer": extracted,
            "calculator_calls": request.session.get("calculator_calls", 0),
        }

    @app.post("/aggregate_metrics")
    async def aggregate_metrics(request: Request):
        body = await request.json()
        rows = body.get("verify_responses") if isinstance(body, dict) else None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            return JSONResponse(status_code=422,
                                content={"detail": "verify_responses must be a list of objects"})
        try:
            return aggregate(rows)
        except ValueError as error:
            return JSONResponse(status_code=500, content={"detail": f"ValueError: {error}"})

    @app.get("/reverify_mode")
    async def reverify_mode():
        return "unknown"

    return app


if __name__ == "__main__":
    name, block = load_instance_config()
    uvicorn.run(build_app(name), host=block.get("host", "127.0.0.1"), port=int(block["port"]),
                log_level="warning")
