#!/usr/bin/python3
"""Downstream calls a shared section cache saves (docs/shared.md, "Shared cache"): 3 gateways behind
no balancer, each under the same steady load, one cached section (TTL 1 s) over KEYS keys. Prints the
downstream calls per key per second with `cache_shared` and without it (each gateway's own cache), and
the gateways' cache events.

    bench/shared_cache.py build/gather [DURATION_S] [RATE_PER_GATEWAY] [KEYS]

Starts its own redis-server (127.0.0.1, a free port, no persistence) and a downstream that answers
after 20 ms and counts its calls per key. Each gateway gets RATE_PER_GATEWAY requests/s, keys taken
in turn, from one keep-alive client per gateway.
"""
import collections
import http.client
import http.server
import json
import subprocess
import sys
import threading
import time

from gateways import metrics, redis_server, start_gateway

GATHER = sys.argv[1] if len(sys.argv) > 1 else "build/gather"
DURATION = float(sys.argv[2]) if len(sys.argv) > 2 else 20
RATE = float(sys.argv[3]) if len(sys.argv) > 3 else 50
KEYS = int(sys.argv[4]) if len(sys.argv) > 4 else 10
GATEWAYS = 3
TTL_MS = 1000

calls = collections.Counter()
calls_lock = threading.Lock()



class Counting(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        with calls_lock:
            calls[self.path] += 1
        time.sleep(0.02)
        body = json.dumps({"key": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass




def wait_shared(port):
    for _ in range(100):
        if "gather_shared_up 1" in metrics(port):
            return
        time.sleep(0.1)
    raise SystemExit("a gateway never reached the store")


def cache_events(body):
    out = collections.Counter()
    for line in body.splitlines():
        if line.startswith("gather_cache_events_total{"):
            event = line.split('event="', 1)[1].split('"', 1)[0]
            out[event] += int(float(line.rsplit(" ", 1)[1]))
    return out


def run(shared, down_port, redis_port):
    section = {"name": "s", "url": f"http://127.0.0.1:{down_port}/k/{{id}}", "timeout_ms": 500,
               "required": True, "cache_ttl_ms": TTL_MS}
    cfg = {"listen": "127.0.0.1:0", "shared": {"redis": f"redis://127.0.0.1:{redis_port}"},
           "routes": [{"path": "/c/{id}", "sections": [section]}]}
    if shared:
        section["cache_shared"] = True
    subprocess.run(["redis-cli", "-p", str(redis_port), "FLUSHALL"], capture_output=True)
    with calls_lock:
        calls.clear()
    gateways = [start_gateway(GATHER, cfg) for _ in range(GATEWAYS)]
    for _, port in gateways:
        wait_shared(port)
    statuses = collections.Counter()
    lock = threading.Lock()
    start = time.monotonic()

    def client(index, port):
        c = http.client.HTTPConnection("127.0.0.1", port)
        n = 0
        while True:
            due = start + n / RATE
            if due - start >= DURATION:
                return
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            c.request("GET", f"/c/{(n + index) % KEYS}")
            r = c.getresponse()
            r.read()
            with lock:
                statuses[r.status] += 1
            n += 1

    threads = [threading.Thread(target=client, args=(i, port)) for i, (_, port) in enumerate(gateways)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    events = collections.Counter()
    for _, port in gateways:
        events += cache_events(metrics(port))
    for p, _ in gateways:
        p.terminate()
        p.wait()
    with calls_lock:
        total = sum(calls.values())
    per_key_s = total / KEYS / elapsed
    label = "cache_shared" if shared else "own caches"
    print(f"{label:13} requests {sum(statuses.values()):6} (non-200: {sum(v for k, v in statuses.items() if k != 200)})"
          f"  downstream calls {total:5}  per key per s {per_key_s:5.2f}"
          f"  events {dict(sorted(events.items()))}", flush=True)


def main():
    down = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=down.serve_forever, daemon=True).start()
    with redis_server() as redis_port:
        print(f"{GATEWAYS} gateways, {RATE:g} requests/s each over {KEYS} keys, TTL {TTL_MS} ms, {DURATION:g} s "
              f"(the floor: 1 call per key per TTL = {1000 / TTL_MS:.2f} per key per s)")
        for shared in (False, True):
            run(shared, down.server_address[1], redis_port)


if __name__ == "__main__":
    main()
