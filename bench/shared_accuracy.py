#!/usr/bin/python3
"""Accuracy of a shared rate limit (docs/shared.md): 3 gateways, one client key, offered load 3x the
limit, spread evenly over the gateways, for DURATION seconds. Prints admitted / (rate x t + burst)
for each mode: exact (sync_ms 0), approximate (sync_ms 50), and per-process limits (no `shared`) for
comparison.

    bench/shared_accuracy.py build/gather [DURATION_S] [RATE] [BURST]

Starts its own redis-server (127.0.0.1, a free port, no persistence) and a downstream answering {}.
"""
import http.client
import http.server
import subprocess
import sys
import threading
import time

from gateways import metrics, redis_server, start_gateway

GATHER = sys.argv[1] if len(sys.argv) > 1 else "build/gather"
DURATION = float(sys.argv[2]) if len(sys.argv) > 2 else 30
RATE = int(sys.argv[3]) if len(sys.argv) > 3 else 100
BURST = int(sys.argv[4]) if len(sys.argv) > 4 else 100
GATEWAYS = 3



class Empty(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass



def wait_shared(port, gateways):
    for _ in range(100):
        body = metrics(port)
        if f"gather_shared_gateways {gateways}" in body and "gather_shared_up 1" in body:
            return
        time.sleep(0.1)
    raise SystemExit("the gateways never saw each other in the store")


def run(mode, down_port, redis_port):
    limit = {"per": "route", "rate_per_s": RATE, "burst": BURST}
    cfg = {"listen": "127.0.0.1:0", "routes": [{"path": "/p", "rate_limit": limit, "sections": [
        {"name": "a", "url": f"http://127.0.0.1:{down_port}/a", "timeout_ms": 2000, "required": True}]}]}
    if mode != "per-process":
        limit["shared"] = True
        cfg["shared"] = {"redis": f"redis://127.0.0.1:{redis_port}", "sync_ms": int(mode.split()[1])}
        subprocess.run(["redis-cli", "-p", str(redis_port), "FLUSHALL"], capture_output=True)
    gateways = [start_gateway(GATHER, cfg) for _ in range(GATEWAYS)]
    if mode != "per-process":
        for _, port in gateways:
            wait_shared(port, GATEWAYS)
    counts = {"admitted": 0, "refused": 0, "other": 0}
    lock = threading.Lock()
    per_client = 3 * RATE / GATEWAYS  # requests per second offered to each gateway
    start = time.monotonic()

    def client(port):
        c = http.client.HTTPConnection("127.0.0.1", port)
        n = 0
        while True:
            due = start + n / per_client
            now = time.monotonic()
            if due - start >= DURATION:
                return
            if due > now:
                time.sleep(due - now)
            c.request("GET", "/p")
            r = c.getresponse()
            r.read()
            with lock:
                counts["admitted" if r.status == 200 else "refused" if r.status == 429 else "other"] += 1
            n += 1

    threads = [threading.Thread(target=client, args=(port,)) for _, port in gateways]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    for p, _ in gateways:
        p.terminate()
        p.wait()
    allowed = RATE * elapsed + BURST
    print(f"{mode:16} admitted {counts['admitted']:6} refused {counts['refused']:6} other {counts['other']}"
          f"  t {elapsed:6.2f} s  rate x t + burst {allowed:8.1f}  ratio {counts['admitted'] / allowed:.4f}",
          flush=True)


def main():
    down = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Empty)
    threading.Thread(target=down.serve_forever, daemon=True).start()
    with redis_server() as redis_port:
        print(f"{GATEWAYS} gateways, one key, rate {RATE}/s burst {BURST}, offered {3 * RATE}/s for {DURATION} s")
        for mode in ("sync 0", "sync 50", "per-process"):
            run(mode, down.server_address[1], redis_port)


if __name__ == "__main__":
    main()
