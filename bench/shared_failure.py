#!/usr/bin/python3
"""A shared rate limit while Redis stops (docs/shared.md, "When Redis fails"): one gateway, a route
limited by a shared limit (`per: route`) whose one section is the benchmarks' nginx (/instant),
an open-loop client offering OFFERED requests/s; after PHASE_S seconds redis-server is
SIGSTOPped, after PHASE_S more SIGCONTed, and the load runs PHASE_S more. Once for the exact mode
(sync_ms 0) and once for the approximate one (sync_ms 50), with the default timeout_ms (20).

    bench/shared_failure.py [GATHER] [PHASE_S] [OFFERED] [RATE]
        defaults: build/gather 5 400 200 (burst: RATE / 10)

Prints per phase (before / stopped / after, a request belonging to the phase its send was due
in): the client's p50, p99, p99.9 and max latency, measured from when the request was due (an
open loop: a request waiting for a free connection, or for this Python client, counts its wait;
on a busy machine the client's own stalls show here), the gateway's own (its log lines' "ms":
read to answered, whole milliseconds) p99, max and how many took 20 ms (timeout_ms) or more,
admitted (200) per second and refused (429) per second; the time from SIGSTOP until the gateway logged `shared_store_down` and until
/metrics said gather_shared_up 0, and from SIGCONT until `shared_store_up`.
"""
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

from gateways import metrics, nginx_downstream, redis_server, sample, start_gateway

GATHER = sys.argv[1] if len(sys.argv) > 1 else "build/gather"
PHASE_S = float(sys.argv[2]) if len(sys.argv) > 2 else 5
OFFERED = float(sys.argv[3]) if len(sys.argv) > 3 else 400
RATE = float(sys.argv[4]) if len(sys.argv) > 4 else 200
BURST = max(1, int(RATE / 10))
CONNS = 32  # the client's keep-alive connections: enough that none waits while Redis is slow
REQUEST = b"GET /p HTTP/1.1\r\nHost: bench\r\n\r\n"


async def exchange(reader, writer, request):
    """One request on a keep-alive connection: the answer's status."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return int(head.split(b" ", 2)[1])


class log_watch:
    """The gateway's stderr, read by a thread: when each store event's line came, and each
    request's own duration (its log line's "ms", whole milliseconds) with when it began."""

    def __init__(self, stream):
        self.seen = {}
        self.requests = []  # (monotonic time the request began, ms)
        self.thread = threading.Thread(target=self.read, args=(stream,), daemon=True)
        self.thread.start()

    def read(self, stream):
        for line in stream:
            now = time.monotonic()
            try:
                record = json.loads(line)
            except ValueError:
                continue
            event = record.get("event")
            if event in ("shared_store_down", "shared_store_up"):
                self.seen.setdefault(event, []).append(now)
            elif record.get("route") == "/p" and "ms" in record:
                self.requests.append((now - record["ms"] / 1000, record["ms"]))

    def first_after(self, event, t):
        return next((s for s in self.seen.get(event, []) if s >= t), None)


async def shared_up_is(port, want, since, limit_s):
    """Polls /metrics every 2 ms until gather_shared_up is `want`: the seconds since `since`."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = b"GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n"
    try:
        while time.monotonic() - since < limit_s:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(next(l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")))
            if sample((await reader.readexactly(length)).decode(), "gather_shared_up") == want:
                return time.monotonic() - since
            await asyncio.sleep(0.002)
        return None
    finally:
        writer.close()


async def drive(port, redis_pid):
    pool = asyncio.Queue()
    for _ in range(CONNS):
        pool.put_nowait(await asyncio.open_connection("127.0.0.1", port))
    results = []  # (due, seconds from due to answer, status)

    async def one(due):
        reader, writer = await pool.get()
        status = await exchange(reader, writer, REQUEST)
        results.append((due, time.monotonic() - due, status))
        pool.put_nowait((reader, writer))

    start = time.monotonic()
    marks = {}

    async def faults():
        await asyncio.sleep(max(0, start + PHASE_S - time.monotonic()))
        marks["stop"] = time.monotonic()
        os.kill(redis_pid, signal.SIGSTOP)
        marks["metrics_down"] = await shared_up_is(port, 0, marks["stop"], PHASE_S)
        await asyncio.sleep(max(0, start + 2 * PHASE_S - time.monotonic()))
        marks["cont"] = time.monotonic()
        os.kill(redis_pid, signal.SIGCONT)
        marks["metrics_up"] = await shared_up_is(port, 1, marks["cont"], PHASE_S)

    fault_task = asyncio.ensure_future(faults())
    tasks, n = [], 0
    while True:
        due = start + n / OFFERED
        if due - start >= 3 * PHASE_S:
            break
        if due > time.monotonic():
            await asyncio.sleep(due - time.monotonic())
        tasks.append(asyncio.ensure_future(one(due)))
        n += 1
    await asyncio.gather(*tasks)
    await fault_task
    return start, marks, results


def pct(values, q):
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def run(mode, sync_ms, redis_port, redis_pid, instant):
    subprocess.run(["redis-cli", "-p", str(redis_port), "FLUSHALL"], capture_output=True, check=True)
    cfg = {"listen": "127.0.0.1:0",
           "shared": {"redis": "redis://127.0.0.1:%d" % redis_port, "sync_ms": sync_ms},
           "routes": [{"path": "/p", "rate_limit": {"per": "route", "rate_per_s": RATE, "burst": BURST, "shared": True},
                       "sections": [{"name": "a", "url": instant, "timeout_ms": 1000, "required": True}]}]}
    gw, port = start_gateway(GATHER, cfg, stderr=subprocess.PIPE)
    log = log_watch(gw.stderr)
    try:
        for _ in range(200):
            if sample(metrics(port), "gather_shared_up") == 1:
                break
            time.sleep(0.05)
        else:
            raise SystemExit("the gateway never reached its Redis")
        start, marks, results = asyncio.run(drive(port, redis_pid))
        scrape = metrics(port)
    finally:
        os.kill(redis_pid, signal.SIGCONT)  # whatever happened, never leave it stopped
        gw.terminate()
        gw.wait()
        log.thread.join(timeout=5)  # every log line read
    print("%s (sync_ms %d): rate %g/s burst %d, offered %g/s, %g s per phase"
          % (mode, sync_ms, RATE, BURST, OFFERED, PHASE_S))
    for name, lo in (("before", 0), ("stopped", PHASE_S), ("after", 2 * PHASE_S)):
        phase = [(took, status) for due, took, status in results if lo <= due - start < lo + PHASE_S]
        ms = sorted(took * 1000 for took, _ in phase)
        admitted = sum(1 for _, s in phase if s == 200) / PHASE_S
        refused = sum(1 for _, s in phase if s == 429) / PHASE_S
        other = sum(1 for _, s in phase if s not in (200, 429))
        own = sorted(m for began, m in log.requests if lo <= began - start < lo + PHASE_S)
        print("  %-8s client p50 %5.2f p99 %6.2f p99.9 %6.2f max %6.2f ms | gateway p99 %d max %d ms, %d of %d >= 20 ms"
              " | admitted %5.1f/s refused %5.1f/s other %d"
              % (name, pct(ms, 0.5), pct(ms, 0.99), pct(ms, 0.999), ms[-1], pct(own, 0.99), own[-1] if own else -1,
                 sum(1 for m in own if m >= 20), len(own), admitted, refused, other))
    since = lambda t, mark: "%.0f ms" % ((t - marks[mark]) * 1000) if t else "never"
    print("  SIGSTOP -> log shared_store_down %s, gather_shared_up 0 %s"
          % (since(log.first_after("shared_store_down", marks["stop"]), "stop"),
             "%.0f ms" % (marks["metrics_down"] * 1000) if marks["metrics_down"] is not None else "never"))
    print("  SIGCONT -> log shared_store_up %s, gather_shared_up 1 %s"
          % (since(log.first_after("shared_store_up", marks["cont"]), "cont"),
             "%.0f ms" % (marks["metrics_up"] * 1000) if marks["metrics_up"] is not None else "never"))
    ops = [l for l in scrape.splitlines() if l.startswith("gather_shared_ops_total{") and not l.endswith(" 0")]
    print("  " + "; ".join(l.replace("gather_shared_ops_total", "") for l in ops))


def main():
    with nginx_downstream() as nginx, redis_server() as redis_port:
        info = subprocess.run(["redis-cli", "-p", str(redis_port), "INFO", "server"], capture_output=True,
                              text=True, check=True).stdout
        redis_pid = int(next(l.split(":")[1] for l in info.splitlines() if l.startswith("process_id:")))
        for mode, sync_ms in (("exact", 0), ("approximate", 50)):
            run(mode, sync_ms, redis_port, redis_pid, nginx + "/instant")
    with open("/proc/loadavg") as f:
        print("loadavg:", f.read().strip())


if __name__ == "__main__":
    main()
