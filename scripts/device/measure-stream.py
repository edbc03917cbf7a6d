#!/usr/bin/env python3
"""The streaming path's host cost per token, without an engine: one
aiohttp server process streams OpenAI chat-completion chunks (the fields
vLLM's serving_chat sends for a token, JSON-encoded per chunk, one SSE
event each) to N concurrent streams of one aiohttp client process that
parses every event as `vllm bench serve --backend openai-chat` does (split
on the blank line, strip "data: ", json.loads, a timestamp, the delta's
content).  Prints the chunks, the wall time and each process's CPU time
per chunk, for 500 and 1,000 streams of 100 chunks sent as fast as the
server can, and 500 streams paced at one chunk per stream every 30 ms (a
decode step's tokens leaving together).  Needs aiohttp and uvloop;
tests/data/calibration/h200-stream/README.md has what it printed."""
import asyncio
import json
import multiprocessing as mp
import time

import aiohttp
from aiohttp import web

PORT = 18777
CPU_FILE = "/tmp/measure-stream-server-cpu"


def chunk(i, rid):
    return {"id": rid, "object": "chat.completion.chunk",
            "created": 1730000000, "model": "Qwen/Qwen3-14B",
            "choices": [{"index": 0, "delta": {"content": " tok%d" % i},
                         "logprobs": None, "finish_reason": None}]}


def server(osl, step_s, ready):
    import uvloop
    uvloop.install()

    async def handle(request):
        body = await request.json()
        rid = "chatcmpl-%x" % id(body)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(osl):
            if step_s > 0:
                await asyncio.sleep(step_s)
            await resp.write(("data: " + json.dumps(chunk(i, rid)) + "\n\n").encode())
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/c", handle)

    async def main():
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", PORT, backlog=4096).start()
        ready.set()
        t0 = time.process_time()
        while True:
            await asyncio.sleep(0.5)
            with open(CPU_FILE, "w") as f:
                f.write(str(time.process_time() - t0))
    asyncio.run(main())


async def one(session, n_tok):
    buf, k = "", 0
    payload = {"model": "m", "messages": [{"role": "user", "content": "x " * 128}],
               "max_completion_tokens": n_tok, "stream": True}
    async with session.post("http://127.0.0.1:%d/c" % PORT, json=payload) as r:
        async for b in r.content.iter_any():
            buf += b.decode()
            while "\n\n" in buf:
                msg, buf = buf.split("\n\n", 1)
                msg = msg.strip().removeprefix("data: ")
                if msg and msg != "[DONE]":
                    time.perf_counter()
                    json.loads(msg)["choices"][0]["delta"].get("content")
                    k += 1
    return k


async def client(n_req, osl):
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        c0, w0 = time.process_time(), time.perf_counter()
        got = await asyncio.gather(*[one(s, osl) for _ in range(n_req)])
        return sum(got), time.process_time() - c0, time.perf_counter() - w0


def main():
    for n_req, osl, step_s in [(500, 100, 0), (1000, 100, 0), (500, 100, 0.03)]:
        ready = mp.Event()
        p = mp.Process(target=server, args=(osl, step_s, ready))
        p.start()
        ready.wait()
        k, ccpu, wall = asyncio.run(client(n_req, osl))
        time.sleep(0.7)
        with open(CPU_FILE) as f:
            scpu = float(f.read())
        p.terminate()
        p.join()
        print(n_req, osl, step_s, "chunks", k, "wall %.2f" % wall,
              "rate %.0f/s" % (k / wall), "client us/chunk %.1f" % (1e6 * ccpu / k),
              "server us/chunk %.1f" % (1e6 * scpu / k), flush=True)


if __name__ == "__main__":
    main()
