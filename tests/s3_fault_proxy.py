#!/usr/bin/env python3
"""An HTTP proxy on 127.0.0.1 in front of a local S3 server that fails
requests on command, for the S3 reliability tests (Rust, CLI and Python).

    python3 tests/s3_fault_proxy.py --target PORT       # in front of a server already running
    python3 tests/s3_fault_proxy.py --moto BUCKET       # starts moto itself, with BUCKET made

It prints `port P` (and `moto M` with --moto) on its first line, then reads
commands from stdin, one a line, each answered by a line on stdout:

    pass | 503 | 500 | drop | lose | hang    every request from now on
    random P SEED [KIND,KIND...]             each request faulted with probability P,
                                             the kind drawn from KINDs (default all five)
    only TEXT                                faults only for requests whose request line
                                             holds TEXT (others pass); `only` alone: all
    stats                                    `stats pass=N 503=N ...`, the requests so far

A fault: `503` answers S3's SlowDown, `500` its InternalError (after reading
the request); `drop` closes the connection with a reset, before or after the
request's body (chosen at random); `lose` passes the request on and drops
the server's answer (the server acted; the client does not know);
`hang` reads the request and never answers (the connection is held for
--hold seconds, then reset).

Bounded: it exits when stdin closes, after --lifetime seconds, or after
--max-requests requests, whichever comes first; every connection is one
request (answers say `Connection: close`).
"""

import argparse
import asyncio
import collections
import random
import socket
import sys
import threading

import moto_server  # tests/moto_server.py, beside this script

KINDS = ("503", "500", "drop", "lose", "hang")


class Faults:
    """What the proxy does to the next request, as the commands say."""

    def __init__(self):
        self.mode = "pass"
        self.probability = 0.0
        self.kinds = KINDS
        self.rng = random.Random(0)
        self.only = None
        self.counts = collections.Counter()

    def command(self, line):
        words = line.split()
        if not words:
            return "ok"
        if words[0] in ("pass",) + KINDS:
            self.mode = words[0]
        elif words[0] == "random" and len(words) >= 3:
            self.mode = "random"
            self.probability = float(words[1])
            self.rng = random.Random(int(words[2]))
            self.kinds = tuple(words[3].split(",")) if len(words) > 3 else KINDS
        elif words[0] == "only":
            self.only = " ".join(words[1:]) or None
        elif words[0] == "stats":
            return "stats " + " ".join(f"{k}={v}" for k, v in sorted(self.counts.items()))
        else:
            return f"error unknown command {line!r}"
        return "ok"

    def choose(self, request_line):
        if self.only is not None and self.only not in request_line:
            action = "pass"
        elif self.mode == "random":
            hit = self.rng.random() < self.probability
            action = self.rng.choice(self.kinds) if hit else "pass"
        else:
            action = self.mode
        self.counts[action] += 1
        return action


async def read_head(reader):
    """The request's head; None where the connection ends first."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None


async def read_body(reader, head):
    """The request's body as sent (a length of bytes, or chunks)."""
    headers = head.decode("latin-1").lower().split("\r\n")
    length = next((int(h.split(":", 1)[1]) for h in headers if h.startswith("content-length:")), 0)
    chunked = any(h.startswith("transfer-encoding:") and "chunked" in h for h in headers)
    if not chunked:
        return await reader.readexactly(length)
    body = b""
    while True:
        size_line = await reader.readuntil(b"\r\n")
        body += size_line
        size = int(size_line.split(b";")[0].strip(), 16)
        body += await reader.readexactly(size + 2)
        if size == 0:
            return body


def with_connection_close(head):
    """`head` saying `Connection: close` (and no other Connection header)."""
    lines = head.split(b"\r\n")
    kept = [l for l in lines[1:] if l and not l.lower().startswith(b"connection:")]
    return b"\r\n".join([lines[0], b"Connection: close"] + kept) + b"\r\n\r\n"


async def ask(target, head, body):
    """The server's whole answer, its head saying `Connection: close`."""
    reader, writer = await asyncio.open_connection("127.0.0.1", target)
    writer.write(with_connection_close(head) + body)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    at = answer.find(b"\r\n\r\n")
    if at < 0:
        return answer
    return with_connection_close(answer[: at + 4])[:-4] + answer[at:]


def error_answer(status, code, message):
    body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body


def reset(writer):
    """Closes the connection with a reset (SO_LINGER 0), as a crashed server would."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        except OSError:
            pass
    writer.transport.abort()


class Proxy:
    def __init__(self, target, hold, max_requests, done):
        self.target = target
        self.hold = hold
        self.max_requests = max_requests
        self.done = done
        self.faults = Faults()
        self.requests = 0

    async def serve(self, reader, writer):
        try:
            await self.one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            reset(writer)

    async def one(self, reader, writer):
        head = await read_head(reader)
        if head is None:
            return writer.close()
        self.requests += 1
        if self.requests >= self.max_requests:
            self.done.set()
        action = self.faults.choose(head.split(b"\r\n", 1)[0].decode("latin-1"))
        if action == "drop" and self.faults.rng.random() < 0.5:
            return reset(writer)  # while the client sends its body
        body = await read_body(reader, head)
        if action == "503":
            writer.write(error_answer("503 Slow Down", "SlowDown", "Please reduce your request rate."))
        elif action == "500":
            writer.write(error_answer("500 Internal Server Error", "InternalError",
                                      "We encountered an internal error. Please try again."))
        elif action == "drop":
            return reset(writer)
        elif action == "hang":
            await asyncio.sleep(self.hold)
            return reset(writer)
        else:
            answer = await ask(self.target, head, body)
            if action == "lose":
                return reset(writer)
            writer.write(answer)
        await writer.drain()
        writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", type=int, help="the S3 server's port on 127.0.0.1")
    parser.add_argument("--moto", metavar="BUCKET", help="start moto with this bucket behind the proxy")
    parser.add_argument("--hold", type=float, default=60.0, help="seconds a hung request is held")
    parser.add_argument("--lifetime", type=float, default=600.0, help="seconds before the proxy exits")
    parser.add_argument("--max-requests", type=int, default=50000, help="requests before the proxy exits")
    args = parser.parse_args()
    target = args.target if args.moto is None else moto_server.start(args.moto)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    proxy = Proxy(target, args.hold, args.max_requests, done)
    server = await asyncio.start_server(proxy.serve, "127.0.0.1", 0, backlog=256)
    port = server.sockets[0].getsockname()[1]
    print(f"port {port}" + (f" moto {target}" if args.moto else ""), flush=True)

    def commands():
        for line in sys.stdin:
            answer = asyncio.run_coroutine_threadsafe(respond(line), loop).result()
            print(answer, flush=True)
        loop.call_soon_threadsafe(done.set)

    async def respond(line):
        return proxy.faults.command(line.strip())

    threading.Thread(target=commands, daemon=True).start()
    loop.call_later(args.lifetime, done.set)
    await done.wait()
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
