"""A deliberately unreliable reverse proxy for tests: 500s, slow answers, an outage.

    python tests/flaky_proxy.py --upstream http://127.0.0.1:8310 --port 8311 --fail-every 3 --slow-every 7

Counts requests to everything but /healthz: every `fail-every`-th answers 500, every
`slow-every`-th waits `slow-s` before forwarding (longer than the client's time-out), and
after `down-after` requests every answer is 500 (the service went down).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def build(upstream: str, fail_every: int, slow_every: int, slow_s: float, down_after: int) -> Starlette:
    counter = itertools.count(1)
    client = httpx.AsyncClient(base_url=upstream, timeout=30)

    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def forward(request: Request) -> Response:
        n = next(counter)
        if (down_after and n > down_after) or (fail_every and n % fail_every == 0):
            return JSONResponse({"error": "injected failure"}, status_code=500)
        if slow_every and n % slow_every == 0:
            await asyncio.sleep(slow_s)
        upstream_response = await client.request(
            request.method, request.url.path, params=request.query_params, content=await request.body(),
            headers={"content-type": request.headers.get("content-type", "application/json")},
        )
        return Response(upstream_response.content, upstream_response.status_code, media_type=upstream_response.headers.get("content-type"))

    return Starlette(routes=[Route("/healthz", healthz), Route("/{path:path}", forward, methods=["GET", "POST"])])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--fail-every", type=int, default=0)
    parser.add_argument("--slow-every", type=int, default=0)
    parser.add_argument("--slow-s", type=float, default=1.5)
    parser.add_argument("--down-after", type=int, default=0)
    a = parser.parse_args()
    app = build(a.upstream, a.fail_every, a.slow_every, a.slow_s, a.down_after)
    uvicorn.run(app, host="127.0.0.1", port=a.port, log_level="warning")


if __name__ == "__main__":
    main()
