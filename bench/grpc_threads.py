#!/usr/bin/python3
"""A gRPC section costs no thread (docs/grpc.md, docs/performance.md): `gather demo`'s book page
(meta: GetBook, required; related: a SearchBooks stream taken to 5; stock over HTTP falling back
to meta; 300 ms a hop, 800 ms the page) against a gRPC downstream whose SearchBooks hangs, with
CONNS inbound connections each sending one request at once.

    bench/grpc_threads.py [GATHER] [GRPC_DOWNSTREAM] [CONNS]
        defaults: build/gather build/bench/grpc_downstream 1000

Prints the gateway's threads (/proc/PID/status) before, while every request is in flight
(gather_inflight_requests and gather_downstream_inflight at least CONNS: every request admitted,
every SearchBooks stream open) and the most seen meanwhile, and after; how many answered,
their statuses and related's section status; latency p50/p99/max as this client saw it (an upper
bound: one Python thread reads 1,000 answers) against the route's deadline.
The downstreams: bench/grpc_downstream (the demo's book service; GetBook after 20 ms, SearchBooks
of an isbn ending "-9" sends nothing until cancelled) and the benchmarks' nginx (/d20).
"""
import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time

from gateways import metrics, nginx_downstream, sample, start_gateway

GATHER = sys.argv[1] if len(sys.argv) > 1 else "build/gather"
GRPC_DOWNSTREAM = sys.argv[2] if len(sys.argv) > 2 else "build/bench/grpc_downstream"
CONNS = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
DEADLINE_MS = 800


def threads_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return -1


def cpu_seconds(pid):
    """utime + stime of the process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def connections_to(port):
    """Established TCP connections whose remote port is `port` (the gateway's to a downstream)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in list(f)[1:]:
                fields = line.split()
                if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


def book_config(grpc_port, protos, stock_base):
    library = "http://127.0.0.1:%d" % grpc_port
    card = ["isbn", "title", "author", "stock"]
    sections = [
        {"name": "meta", "required": True, "timeout_ms": 300, "fields": card,
         "grpc": {"target": library, "method": "linkd.v3.Library/GetBook", "message": {"isbn": "{isbn}"}}},
        {"name": "related", "timeout_ms": 300, "fallback": [], "fields": card,
         "grpc": {"target": library, "method": "linkd.v3.Library/SearchBooks",
                  "message": {"query": "{isbn}", "page_size": 5}, "max_messages": 5}},
        {"name": "stock", "url": stock_base + "/d20", "timeout_ms": 300, "fallback_from": "meta"},
    ]
    return {"listen": "127.0.0.1:0",
            "protos": {"files": ["linkd/v3/library.proto"], "import_paths": [protos]},
            "routes": [{"path": "/books/{isbn}", "deadline_ms": DEADLINE_MS, "sections": sections}]}


async def one_request(reader, writer, isbn):
    """Sends GET /books/ISBN and reads the answer (Connection: close): (status, body, seconds)."""
    start = time.monotonic()
    writer.write(("GET /books/%s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n" % isbn).encode())
    data = await reader.read(-1)
    took = time.monotonic() - start
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
    return status, body, took


async def until_inflight(port, want, limit_s=2):
    """Polls /metrics (on a connection of its own) until `want` requests are in flight and as many
    downstream calls (every SearchBooks stream open): whether that happened."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        text = (await reader.read(-1)).decode()
        writer.close()
        if (sample(text, "gather_inflight_requests") or 0) >= want and \
                (sample(text, "gather_downstream_inflight") or 0) >= want:
            return True
        await asyncio.sleep(0.02)
    return False


async def load(port, pid, grpc_port):
    conns = await asyncio.gather(*(asyncio.open_connection("127.0.0.1", port) for _ in range(CONNS)))
    tasks = [asyncio.ensure_future(one_request(r, w, "978-7-111-%05d-9" % i)) for i, (r, w) in enumerate(conns)]
    all_in = await until_inflight(port, CONNS)
    during = threads_of(pid)
    downstream_conns = connections_to(grpc_port)
    results = await asyncio.gather(*tasks)
    return all_in, during, downstream_conns, results


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = CONNS * 2 + 256  # this client's sockets, and the gateway's (it inherits the limit)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    protos = tempfile.mkdtemp(prefix="gather-protos.")
    grpc = subprocess.Popen([GRPC_DOWNSTREAM, "20", "0", protos], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    grpc_port = int(grpc.stdout.readline())
    gw = None
    try:
        with nginx_downstream() as stock:
            gw, port = start_gateway(GATHER, book_config(grpc_port, protos, stock))
            # Warm: the h2 connection to the library and nginx's keep-alive ones exist before counting.
            ok = asyncio.run(warm(port))
            before = threads_of(gw.pid)
            most = [before]
            stop = threading.Event()

            most_conns = [0]

            def watch():  # the most threads (every ms) and downstream connections (every 100) seen
                n = 0
                while not stop.is_set():
                    most[0] = max(most[0], threads_of(gw.pid))
                    if n % 100 == 0:
                        most_conns[0] = max(most_conns[0], connections_to(grpc_port))
                    n += 1
                    time.sleep(0.001)

            watcher = threading.Thread(target=watch)
            watcher.start()
            cpu = cpu_seconds(gw.pid)
            all_in, during, downstream_conns, results = asyncio.run(load(port, gw.pid, grpc_port))
            cpu = cpu_seconds(gw.pid) - cpu
            stop.set()
            watcher.join()
            after = threads_of(gw.pid)
            scrape = metrics(port)
    finally:
        if gw:
            gw.terminate()
            gw.wait()
        grpc.stdin.close()
        grpc.wait()

    statuses, related = {}, {}
    for status, body, _ in results:
        statuses[status] = statuses.get(status, 0) + 1
        if status == 200:
            s = json.loads(body)["sections"]["related"]["status"]
            related[s] = related.get(s, 0) + 1
    ms = sorted(took * 1000 for _, _, took in results)
    pick = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]
    print("warm-up page (related ok):", ok)
    print("gateway threads: before %d, with all %d in flight %d (most seen %d), after %d"
          % (before, CONNS, during, most[0], after))
    print("all %d requests and their streams in flight at once: %s; gateway connections to the gRPC downstream then %d, most seen %d"
          % (CONNS, all_in, downstream_conns, most_conns[0]))
    print("answered %d of %d; statuses %s; related %s" % (len(results), CONNS, statuses, related))
    print("latency (client side) p50 %.0f ms, p99 %.0f ms, max %.0f ms; route deadline %d ms; over it: %d"
          % (pick(0.5), pick(0.99), ms[-1], DEADLINE_MS, sum(1 for m in ms if m > DEADLINE_MS)))
    within = ", ".join("%s s %d" % (le, sample(scrape, 'gather_request_duration_seconds_bucket{route="/books/{isbn}",le="%s"}' % le) or 0)
                       for le in ("0.3", "0.4", "0.5", "0.75", "1"))
    print("gateway CPU for the %d requests (and the /metrics polls): %.2f s, %.0f us a request"
          % (CONNS, cpu, cpu * 1e6 / CONNS))
    print("gateway's own durations (read to answered), answered within:", within)
    calls = re.findall(r'gather_grpc_calls_total\{route="[^"]*",section="([^"]*)",code="([^"]*)"\} (\d+)', scrape)
    print("gather_grpc_calls_total:", ", ".join("%s %s %s" % c for c in calls))
    with open("/proc/loadavg") as f:
        print("loadavg:", f.read().strip())


async def warm(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    status, body, _ = await one_request(reader, writer, "978-7-111-12345-7")
    return status == 200 and json.loads(body)["sections"]["related"]["status"] == "ok"


if __name__ == "__main__":
    main()
