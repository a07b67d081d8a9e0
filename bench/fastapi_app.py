"""FastAPI peer of bench/json_route_server.cpp for bench/http_load.sh.

POST /verify parses the JSON body (no pydantic model), reads `response.output` and `reward`
and answers {"reward": R, "items": N}. Run with:
  /usr/bin/python3 -m uvicorn fastapi_app:app --app-dir bench --loop uvloop --http httptools \
      --workers 1 --log-level warning --no-access-log --backlog 8192
"""
from fastapi import FastAPI, Request

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
        r = body.get("reward")
        if isinstance(r, (int, float)) and not isinstance(r, bool):
            reward = float(r)
    return {"reward": reward, "items": items}
