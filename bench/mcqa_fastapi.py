"""FastAPI peer of gym-cpp's `mcqa` resources server, for bench/verify_load.sh.

One process serves `POST /verify` the way NeMo Gym 0.7.0's `resources_servers/mcqa/app.py` does:
the body is validated into pydantic models shaped like NeMo Gym's `MCQAVerifyRequest`
(`responses_create_params`: the strict create params with their defaults; `response`: the
Response with typed output items and usage; the mcqa row fields `uuid`, `options`,
`expected_answer`, `metadata`, `grading_mode`, `template_metadata`), the answer letter is
extracted and graded by mcqa's rules (environments/mcqa/README.md; the same functions as
upstream, restated here), and the answer is the `MCQAVerifyResponse` model (create params,
response, reward, expected_answer, extracted_answer), serialised by FastAPI.

Like every NeMo Gym server it keeps a per-client session in a signed cookie and sets it on every
answer; that is one pure-ASGI middleware here (NeMo Gym stacks Starlette's SessionMiddleware, an
`@app.middleware("http")` function and its rollout-context middleware, which cost more), signed
the way gym-cpp signs it (docs/reference/http-server.md#session-cookies), since itsdangerous is
not installed.

Run (what the benchmark does):
  /usr/bin/python3 -m uvicorn mcqa_fastapi:app --app-dir bench --host 127.0.0.1 --port PORT \
      --loop uvloop --http httptools --workers 1 --no-access-log --log-level warning

Written for the pydantic 1.10 / FastAPI 0.92 of Debian's python3; the models also load on
pydantic 2. `MCQA_GRADING_MODE` (environment) plays the instance-level `grading_mode` key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import uuid
from http.cookies import SimpleCookie
from typing import Any, Dict, List, Literal, Optional

import pydantic
from pydantic import BaseModel

# The Responses API models (NeMo Gym's openai_utils, restated) are shared with bench/e2e_peer.py.
from ng_models import PYDANTIC_2, Response, ResponseCreateParams


GradingMode = Literal["strict_single_letter_boxed", "lenient_boxed", "lenient_answer_colon"]


class MCQAVerifyRequest(BaseModel):
    responses_create_params: ResponseCreateParams
    response: Response
    uuid: Optional[str] = None
    options: Optional[List[Dict[str, Optional[str]]]] = None
    expected_answer: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None
    grading_mode: GradingMode = "strict_single_letter_boxed"
    template_metadata: Optional[Dict[str, Any]] = None


class MCQAVerifyResponse(BaseModel):
    responses_create_params: ResponseCreateParams
    response: Response
    reward: float
    expected_answer: str
    extracted_answer: Optional[str]


# ----------------------------------------------------------------------------------------------
# Extraction and grading (environments/mcqa/README.md)
# ----------------------------------------------------------------------------------------------

LETTER_ONLY = re.compile(r"^[^A-Za-z]*([A-Z])[^A-Za-z]*$")
LETTER_LABEL = re.compile(r"^\s*([A-Z])\s*[:).\-]")
ANSWER_COLON = re.compile(r"(?i)answer\s*:\s*(.+)")
ANSWER_COLON_MD = re.compile(r"(?im)[*_]{0,2}Answer[*_]{0,2}\s*:[*_\s]{0,2}(.+)")
TEXT_WRAPPER = re.compile(r"\\text\{\s*(.*?)\s*\}", re.S)
STANDALONE_LETTER = re.compile(r"(?<![A-Za-z])([A-Za-z])(?![A-Za-z])")
CHOICE_SEPARATOR = re.compile(r"(?:\s*[/|&,;]\s*|\s+(?:or|and)\s+|\s+)", re.I)
LEADING_LETTER = re.compile(r"^([a-zA-Z])(?![a-zA-Z0-9])")
LAST_CAPITAL = re.compile(r"\b[A-Z]\b(?!.*\b[A-Z]\b)", re.S)

LETTER_NORMALISATION = (
    ("أ", " A"), ("ب", " B"), ("ج", " C"), ("د", " D"),
    ("অ", " A"), ("ব", " B"), ("ড", " C"), ("ঢ", " D"),
    ("Ａ", " A"), ("Ｂ", " B"), ("Ｃ", " C"), ("Ｄ", " D"),
)


def normalise_letters(s: str) -> str:
    for src, dst in LETTER_NORMALISATION:
        s = s.replace(src, dst)
    return s.strip()


def normalise_text(s: str) -> str:
    return " ".join(s.lower().split())


def last_boxed(text: str) -> Optional[str]:
    """Content of the last `\\boxed{`, braces counted to the matching `}`; None when unbalanced."""
    marker = "\\boxed{"
    at = text.rfind(marker)
    if at < 0:
        return None
    depth = 1
    i = at + len(marker)
    for j in range(i, len(text)):
        ch = text[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i:j]
    return None


def strip_text_wrappers(s: str) -> str:
    while True:
        m = TEXT_WRAPPER.fullmatch(s)
        if m is None:
            return s
        s = m.group(1)


def allowed_letters(options: Optional[List[Dict[str, Optional[str]]]]) -> set:
    out = set()
    for entry in options or []:
        for key, value in entry.items():
            if isinstance(key, str) and len(key) == 1 and key.isalpha() and value is not None:
                out.add(key.upper())
    return out


def strict_boxed(text: str, allowed: set) -> Optional[str]:
    inner = last_boxed(text)
    if inner is None:
        return None
    inner = strip_text_wrappers(inner.strip())
    m = LETTER_ONLY.match(inner) or LETTER_LABEL.match(inner)
    if m is None:
        return None
    letter = m.group(1).upper()
    return letter if letter in allowed else None


def boxed_option_text(text: str, options, allowed: set) -> Optional[str]:
    inner = last_boxed(text)
    if inner is None:
        return None
    inner = inner.strip()
    candidates = [normalise_text(inner), normalise_text(strip_text_wrappers(inner))]
    found = set()
    for entry in options or []:
        for key, value in entry.items():
            if value is None or not isinstance(key, str) or len(key) != 1 or key.upper() not in allowed:
                continue
            norm = normalise_text(value)
            if norm and any(norm in c for c in candidates):
                found.add(key.upper())
    return next(iter(found)) if len(found) == 1 else None


def answer_colon(text: str, options, allowed: set) -> Optional[str]:
    m = ANSWER_COLON.search(text)
    if m is None:
        return None
    candidate = strip_text_wrappers(m.group(1)).strip()
    if len(candidate) == 1 and candidate.isalpha() and candidate.upper() in allowed:
        return candidate.upper()
    wanted = normalise_text(candidate)
    for entry in options or []:
        for key, value in entry.items():
            if key.upper() in allowed and normalise_text(value) == wanted:
                return key.upper()
    return None


def lists_several_choices(payload: str, allowed: set) -> bool:
    hits = [(m.group(1).upper(), m.span(1)) for m in STANDALONE_LETTER.finditer(payload)
            if m.group(1).upper() in allowed]
    for (a, (_, a_end)), (b, (b_start, _)) in zip(hits, hits[1:]):
        if a != b and CHOICE_SEPARATOR.fullmatch(payload[a_end:b_start]) is not None:
            return True
    return False


def payload_letter(payload: str, allowed: set) -> Optional[str]:
    candidate = normalise_letters(payload).strip().strip("*_` \t\n\r.,;:")
    if lists_several_choices(candidate, allowed):
        return None
    if len(candidate) == 1:
        letter = candidate
    else:
        m = LEADING_LETTER.match(candidate)
        if m is not None:
            letter = m.group(1)
        else:
            m = LAST_CAPITAL.search(candidate)
            letter = m.group(0) if m else None
    if letter and letter.upper() in allowed:
        return letter.upper()
    return None


def custom_regex(text: str, pattern: str, allowed: set, options) -> Optional[str]:
    try:
        matches = re.findall(pattern, text, re.IGNORECASE)
    except re.error:
        return None
    if not matches:
        return None
    # A pattern with two or more groups gives tuples: .strip() fails, so /verify fails (500).
    captured = normalise_letters(matches[-1].strip()).upper()
    if len(captured) == 1 and captured.isalpha():
        return captured  # the custom pattern is trusted
    wanted = normalise_text(captured)
    for entry in options or []:
        for key, value in entry.items():
            if value is not None and key.upper() in allowed and normalise_text(value) == wanted:
                return key.upper()
    return None


def extract(text: str, mode: str, options, allowed: set, template_metadata) -> Optional[str]:
    pred = None
    if template_metadata and "output_regex" in template_metadata:
        patterns = template_metadata["output_regex"]
        for pattern in [patterns] if isinstance(patterns, str) else patterns:
            pred = custom_regex(text, pattern, allowed, options)
            if pred is not None:
                break
    if pred is not None:
        return pred
    if mode == "strict_single_letter_boxed":
        return strict_boxed(text, allowed)
    if mode == "lenient_boxed":
        return strict_boxed(text, allowed) or boxed_option_text(text, options, allowed)
    if mode == "lenient_answer_colon":
        return answer_colon(text, options, allowed)
    if mode == "lenient_answer_colon_md":
        for payload in reversed(ANSWER_COLON_MD.findall(text)):
            pred = payload_letter(payload, allowed)
            if pred is not None:
                return pred
    return None


CONFIG_GRADING_MODE = os.environ.get("MCQA_GRADING_MODE") or None


async def verify(body: MCQAVerifyRequest) -> MCQAVerifyResponse:
    gold = (body.expected_answer or "").strip().upper()
    allowed = allowed_letters(body.options)
    mode = CONFIG_GRADING_MODE or body.grading_mode
    text = body.response.output_text.strip()
    pred = None
    if text:
        pred = extract(text, mode, body.options, allowed, body.template_metadata)
    reward = 1.0 if (pred is not None and gold and pred == gold) else 0.0
    return MCQAVerifyResponse(
        responses_create_params=body.responses_create_params,
        response=body.response,
        reward=reward,
        expected_answer=gold,
        extracted_answer=pred,
    )


async def root() -> Dict[str, str]:
    return {"status": "ok"}


# ----------------------------------------------------------------------------------------------
# Session cookie on every answer (NeMo Gym: SessionMiddleware + add_session_id)
# ----------------------------------------------------------------------------------------------

COOKIE_NAME = "MCQAResourcesServer___mcqa"
_KEY = COOKIE_NAME.encode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(payload: str) -> str:
    return _b64(hmac.new(_KEY, payload.encode(), hashlib.sha256).digest())


def _session_id(cookie_header: str) -> Optional[str]:
    try:
        morsel = SimpleCookie(cookie_header).get(COOKIE_NAME)
        if morsel is None:
            return None
        payload, _, sig = morsel.value.partition(".")
        if not hmac.compare_digest(sig, _sign(payload)):
            return None
        sid = json.loads(_unb64(payload)).get("session_id")
        return sid if isinstance(sid, str) else None
    except Exception:  # a malformed cookie starts a new session
        return None


class SessionCookieMiddleware:
    def __init__(self, app):
        self.inner = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        sid = None
        for name, value in scope["headers"]:
            if name == b"cookie":
                sid = _session_id(value.decode("latin-1"))
                break
        if sid is None:
            sid = str(uuid.uuid4())
        scope.setdefault("state", {})["session_id"] = sid
        payload = _b64(json.dumps({"session_id": sid}, separators=(",", ":")).encode())
        cookie = (f"{COOKIE_NAME}={payload}.{_sign(payload)}; Path=/; Max-Age=1209600; HttpOnly; "
                  "SameSite=lax").encode("latin-1")

        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + [(b"set-cookie", cookie)]
            await send(message)

        await self.inner(scope, receive, send_with_cookie)


def make_app():
    from fastapi import FastAPI

    application = FastAPI()
    application.post("/verify")(verify)
    application.get("/")(root)
    application.add_middleware(SessionCookieMiddleware)
    return application


# ----------------------------------------------------------------------------------------------
# `python3 mcqa_fastapi.py time BODY_FILE [N]`: the pydantic work of one request, without HTTP:
# validate the body into MCQAVerifyRequest, grade, and dump the MCQAVerifyResponse to JSON.
# Runs on pydantic 1 or 2 (no FastAPI needed), to compare the peer's pydantic with NeMo Gym's.
# ----------------------------------------------------------------------------------------------


def _time(body_path: str, n: int) -> None:
    import asyncio
    import sys
    import time

    data = json.load(open(body_path, encoding="utf-8"))
    if PYDANTIC_2:
        parse, dump = MCQAVerifyRequest.model_validate, lambda r: r.model_dump_json()
    else:
        parse, dump = MCQAVerifyRequest.parse_obj, lambda r: r.json()
    loop = asyncio.new_event_loop()
    one = lambda: dump(loop.run_until_complete(verify(parse(data))))  # noqa: E731
    out = json.loads(one())
    for _ in range(max(n // 10, 1)):
        one()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(n):
            one()
        best = min(best, (time.perf_counter() - t) / n)
    core = ""
    if PYDANTIC_2:
        import pydantic_core

        core = f" (pydantic-core {pydantic_core.__version__})"
    print(f"pydantic {pydantic.VERSION}{core}, Python {sys.version.split()[0]}: {best * 1e6:.0f} us per "
          f"request (validate, grade, dump; reward {out['reward']})")


if __name__ == "__main__":
    import sys

    if len(sys.argv) >= 3 and sys.argv[1] == "time":
        _time(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 500)
    else:
        sys.exit("usage: mcqa_fastapi.py time BODY_FILE [N]  (serve it with uvicorn mcqa_fastapi:app)")
else:
    app = make_app()
