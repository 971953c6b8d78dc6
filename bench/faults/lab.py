#!/usr/bin/env python3
"""Gather's fault lab (docs/security.md, "Real faults"): run through bench/faults/run.sh.

The whole lab runs inside one network namespace made for it, on that namespace's own loopback
(127.0.0.1 only): the gateway (`gather serve`), two downstreams (nginx), a fault proxy, a DNS
stand-in and the load generator. Faults come from nftables rules per downstream port, a tbf qdisc on the
namespace's `lo`, the fault proxy (jitter, a stall mid-body) and the resolver (slow, silent,
NXDOMAIN names). For each fault: load before, during and after it; every answer's latency
against its route's deadline; the victim section's status; and the gateway's descriptors,
threads, memory and actors (/proc and /debug/actors) before the fault and after it was lifted.

  lab.py --gather PATH [--only NAME,...] [--rps N] [--seconds S] [--margin-ms M] [--out FILE]
    (host side: makes the namespace, re-runs itself inside it, deletes it)
  lab.py inside ...   (inside the namespace: the lab itself)
  lab.py serve        (inside: downstreams, proxies and resolver, in a process of their own)
"""
import argparse
import concurrent.futures
import http.client
import http.server
import json
import os
import random
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time

NS = "gatherlab"
BASE_PORT, VICTIM_PORT, JITTER_PORT, STALL_PORT, SLOW_PORT = 9001, 9002, 9003, 9004, 9005
CONTROL_PORT = 9009  # the serve process's switches (DNS behaviour), loopback of the namespace only
STALL_AFTER_BYTES = 4096
BIG_BODY = json.dumps({"id": "big", "items": ["x" * 60] * 1000})  # ~64 KB

# ---------------------------------------------------------------------------------------------
# serve: the downstreams, the fault proxy and the resolver


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


NGINX_CONF = """
worker_processes 1;
daemon off;
user root;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log crit;
events {{ worker_connections 16384; }}
http {{
  access_log off;
  default_type application/json;
  # Every answer closes its connection, so the gateway pools none and its descriptor count
  # returns exactly to where it was once calls stop (what the leak check compares).
  keepalive_timeout 0;
  client_body_temp_path {prefix}; proxy_temp_path {prefix}; fastcgi_temp_path {prefix};
  uwsgi_temp_path {prefix}; scgi_temp_path {prefix};
  server {{
    listen 127.0.0.1:{base} backlog=4096;
    listen 127.0.0.1:{victim} backlog=4096;
    # The victim's instances behind the lab's upstreams (the namespace's lo routes 127/8).
    listen 127.0.0.2:{victim} backlog=4096;
    listen 127.0.0.3:{victim} backlog=4096;
    listen 127.0.0.4:{victim} backlog=4096;
    root {prefix};
    location ~ ^/ok/(\\w+)$ {{ return 200 '{{"id": "$1"}}'; }}
    location ~ ^/big/ {{ rewrite ^ /big.json break; }}
  }}
}}
"""


def downstreams(prefix):
    """nginx on the base and victim ports (a Python server stalled under this machine's load and
    made the base section fail for reasons of the lab's own)."""
    os.makedirs(prefix, exist_ok=True)
    with open(os.path.join(prefix, "big.json"), "w") as f:
        f.write(BIG_BODY)
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF.format(prefix=prefix, base=BASE_PORT, victim=VICTIM_PORT))
    return subprocess.Popen(["nginx", "-p", prefix, "-c", os.path.join(prefix, "nginx.conf"),
                             "-e", os.path.join(prefix, "error.log")])


def pipe(src, dst, delay=None, stall_after=None):
    """Copies src to dst until either ends: each read delayed by delay() seconds; or, after
    stall_after bytes, one stall of 5 s, then the rest."""
    sent = 0
    stalled = False
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if delay:
                time.sleep(delay())
            if stall_after is not None and not stalled and sent + len(data) > stall_after:
                cut = max(0, stall_after - sent)
                dst.sendall(data[:cut])
                time.sleep(5.0)
                stalled = True
                data = data[cut:]
            dst.sendall(data)
            sent += len(data)
    except OSError:  # the other side went away: so does this one
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def proxy(listen_port, target_port, delay=None, stall_after=None):
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", listen_port))
    lsock.listen(1024)

    def serve_one(client):
        try:
            upstream = socket.create_connection(("127.0.0.1", target_port))
        except OSError:
            client.close()
            return
        threading.Thread(target=pipe, args=(client, upstream, delay), daemon=True).start()
        pipe(upstream, client, delay, stall_after)
        client.close()
        upstream.close()

    while True:
        client, _ = lsock.accept()
        threading.Thread(target=serve_one, args=(client,), daemon=True).start()


# The resolver: A records for *.lab names, each name with a behaviour the lab switches.
DNS_MODES = {"fast.lab": "fast", "victim.lab": "fast", "svc.lab": "fast"}  # fast | slow | silent | nxdomain
# A name's A records (default 127.0.0.1), TTL 1: the upstream `victim-dns` follows svc.lab's set.
DNS_SETS = {"svc.lab": ["127.0.0.2", "127.0.0.3"]}


def dns_answer(query, mode, addresses=("127.0.0.1",)):
    """A reply to a one-question query: an A record per address (127.0.0.1 unless the name has a
    set), nothing for other types, or NXDOMAIN. (A lab stand-in for a resolver: the gateway asks
    it through getaddrinfo for plain origins and through c-ares for its upstreams.)"""
    qid, _flags, qd = struct.unpack(">HHH", query[:6])
    at = 12
    while query[at] != 0:
        at += 1 + query[at]
    question = query[12:at + 5]
    qtype = struct.unpack(">H", query[at + 1:at + 3])[0]
    rcode = 3 if mode == "nxdomain" else 0
    answers, count = b"", 0
    if rcode == 0 and qtype == 1:
        for address in addresses:
            answers += struct.pack(">HHHIH", 0xC00C, 1, 1, 1, 4) + socket.inet_aton(address)
            count += 1
    header = struct.pack(">HHHHHH", qid, 0x8180 | rcode, 1, count, 0, 0)
    return header + question + answers


def dns_name(query):
    labels, at = [], 12
    while query[at] != 0:
        labels.append(query[at + 1:at + 1 + query[at]].decode(errors="replace"))
        at += 1 + query[at]
    return ".".join(labels).lower()


def resolver():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 53))

    def reply_later(query, peer, after, mode):
        time.sleep(after)
        sock.sendto(dns_answer(query, mode), peer)

    while True:
        query, peer = sock.recvfrom(4096)
        try:
            name = dns_name(query)
            mode = DNS_MODES.get(name, "nxdomain")
            if mode == "silent":
                continue
            if mode == "slow":
                threading.Thread(target=reply_later, args=(query, peer, 1.5, "fast"), daemon=True).start()
                continue
            sock.sendto(dns_answer(query, mode, DNS_SETS.get(name, ("127.0.0.1",))), peer)
        except (IndexError, struct.error):
            continue


class Control(http.server.BaseHTTPRequestHandler):
    """GET /dns/NAME/MODE switches a name's behaviour; GET /dns/NAME/set/A,B its A records."""

    def do_GET(self):
        parts = self.path.split("/")
        if len(parts) == 5 and parts[3] == "set":
            DNS_SETS[parts[2]] = parts[4].split(",")
        else:
            DNS_MODES[parts[2]] = parts[3]
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def serve():
    threading.Thread(target=proxy, args=(JITTER_PORT, VICTIM_PORT, lambda: random.uniform(0.030, 0.070)),
                     daemon=True).start()
    threading.Thread(target=proxy, args=(STALL_PORT, VICTIM_PORT, None, STALL_AFTER_BYTES), daemon=True).start()
    threading.Thread(target=proxy, args=(SLOW_PORT, VICTIM_PORT, lambda: 0.050), daemon=True).start()
    threading.Thread(target=resolver, daemon=True).start()
    print("serving", flush=True)
    Server(("127.0.0.1", CONTROL_PORT), Control).serve_forever()


# ---------------------------------------------------------------------------------------------
# inside: the gateway, the faults and the load


def section(name, url, timeout_ms, required=False):
    s = {"name": name, "url": url, "timeout_ms": timeout_ms}
    if required:
        s["required"] = True
    else:
        s["fallback"] = {}
    return s


def lab_config(port):
    b = f"http://127.0.0.1:{BASE_PORT}"

    def route(path, deadline_ms, victim_url, timeout_ms=300, extra=(), victim_keys=None):
        victim = section("victim", victim_url, timeout_ms)
        victim.update(victim_keys or {})
        return {"path": path, "deadline_ms": deadline_ms,
                "sections": [section("base", b + "/ok/{id}", 300, required=True), *extra, victim]}

    # An upstream's victim section: 200 ms a call, a second call (to another endpoint) in time.
    retried = {"retry": {"attempts": 2, "backoff_ms": 0}}

    return {
        "listen": f"127.0.0.1:{port}",
        "routes": [
            route("/direct/{id}", 600, f"http://127.0.0.1:{VICTIM_PORT}/ok/{{id}}"),
            route("/big/{id}", 800, f"http://127.0.0.1:{VICTIM_PORT}/big/{{id}}", 500),
            route("/jitter/{id}", 600, f"http://127.0.0.1:{JITTER_PORT}/ok/{{id}}"),
            route("/stall/{id}", 1500, f"http://127.0.0.1:{STALL_PORT}/big/{{id}}", 1000),
            # The DNS routes: the victim by a name the resolver is told to mistreat, and a
            # bystander by a name it always answers at once.
            route("/dns/{id}", 600, f"http://victim.lab:{VICTIM_PORT}/ok/{{id}}",
                  extra=(section("bystander", f"http://fast.lab:{BASE_PORT}/ok/{{id}}", 300),)),
            # Upstreams (docs/upstreams.md): three instances by address; one instance of two
            # slow (behind a proxy that waits 50 ms a read); the instances of svc.lab's A records.
            route("/upstream/{id}", 600, "http://victim-svc/ok/{id}", 200, victim_keys=retried),
            route("/upstream-slow/{id}", 600, "http://victim-slow/ok/{id}", 200, victim_keys=retried),
            route("/upstream-dns/{id}", 600, "http://victim-dns/ok/{id}", 200, victim_keys=retried),
        ],
        "upstreams": {
            "victim-svc": {"endpoints": [f"127.0.0.{i}:{VICTIM_PORT}" for i in (2, 3, 4)],
                           "outlier": {"consecutive_failures": 3, "eject_ms": 30000}},
            "victim-slow": {"endpoints": [f"127.0.0.2:{VICTIM_PORT}", f"127.0.0.1:{SLOW_PORT}"]},
            "victim-dns": {"dns": f"svc.lab:{VICTIM_PORT}", "refresh_ms": 1000},
        },
    }


def nft(rules):
    script = "flush ruleset\ntable inet lab {\n chain out {\n  type filter hook output priority 0; policy accept;\n"
    script += "".join(f"  {r}\n" for r in rules) + " }\n}\n"
    subprocess.run(["nft", "-f", "-"], input=script.encode(), check=True)


def victim_rules(rule):
    """A rule for the victim's port in both directions (requests and answers)."""
    return [f"tcp dport {VICTIM_PORT} {rule}", f"tcp sport {VICTIM_PORT} {rule}"]


def control(path):
    c = http.client.HTTPConnection("127.0.0.1", CONTROL_PORT, timeout=5)
    c.request("GET", path)
    c.getresponse().read()
    c.close()


def tbf(on):
    if on:
        subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "1mbit", "burst", "32kbit",
                        "latency", "400ms"], check=True)
    else:
        subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], check=False, stderr=subprocess.DEVNULL)


class Flapping:
    """svc.lab's A records switched every second between {.2, .3} and {.3, .4} while on."""

    def __init__(self):
        self.on = threading.Event()

    def start(self):
        self.on.set()

        def flap():
            sets, k = ("127.0.0.2,127.0.0.3", "127.0.0.3,127.0.0.4"), 0
            while self.on.is_set():
                k += 1
                control(f"/dns/svc.lab/set/{sets[k % 2]}")
                time.sleep(1.0)

        threading.Thread(target=flap, daemon=True).start()

    def stop(self):
        self.on.clear()
        control("/dns/svc.lab/set/127.0.0.2,127.0.0.3")


FLAPPING = Flapping()
ONE_INSTANCE = "ip daddr 127.0.0.2 tcp dport {p} drop", "ip saddr 127.0.0.2 tcp sport {p} drop"

# name: (route, start fault, lift fault, victim statuses expected while it is on,
#        fault starts this many seconds into the fault phase: a link that dies mid-run)
FAULTS = {
    "loss 2%": ("/direct/", lambda: nft(victim_rules("numgen random mod 100 < 2 drop")), lambda: nft([]),
                {"ok", "timeout"}, 0),
    "loss 10%": ("/direct/", lambda: nft(victim_rules("numgen random mod 100 < 10 drop")), lambda: nft([]),
                 {"ok", "timeout"}, 0),
    "black hole mid-run": ("/direct/", lambda: nft(victim_rules("drop")), lambda: nft([]), {"ok", "timeout"}, 4),
    "SYN black hole": ("/direct/", lambda: nft([f"tcp dport {VICTIM_PORT} tcp flags & (syn | ack) == syn drop"]),
                       lambda: nft([]), {"timeout"}, 0),
    "RST storm": ("/direct/", lambda: nft([f"tcp dport {VICTIM_PORT} reject with tcp reset"]), lambda: nft([]),
                  {"error"}, 0),
    "thin link (tbf 1 Mbit)": ("/big/", lambda: tbf(True), lambda: tbf(False), {"ok", "timeout", "error"}, 0),
    "jitter 50 +/- 20 ms per read": ("/jitter/", lambda: None, lambda: None, {"ok"}, 0),
    "5 s stall mid-body": ("/stall/", lambda: None, lambda: None, {"timeout"}, 0),
    # A call that asked within its timeout of a lookup's end shares that lookup's answer: `ok`
    # for a slow name, `error` once the system's resolver gives up on a silent one.
    "slow DNS (1.5 s)": ("/dns/", lambda: control("/dns/victim.lab/slow"), lambda: control("/dns/victim.lab/fast"),
                         {"ok", "timeout"}, 0),
    "silent DNS": ("/dns/", lambda: control("/dns/victim.lab/silent"), lambda: control("/dns/victim.lab/fast"),
                   {"timeout", "error"}, 0),
    "NXDOMAIN": ("/dns/", lambda: control("/dns/victim.lab/nxdomain"), lambda: control("/dns/victim.lab/fast"),
                 {"error"}, 0),
    # Upstreams: a call that meets the fault is retried on another endpoint in time, so the
    # victim section stays `ok`; the black-holed instance is ejected after 3 timeouts.
    "upstream: one instance black-holed": ("/upstream/", lambda: nft([r.format(p=VICTIM_PORT) for r in ONE_INSTANCE]),
                                           lambda: nft([]), {"ok"}, 0),
    "upstream: one instance slow (50 ms a read)": ("/upstream-slow/", lambda: None, lambda: None, {"ok"}, 0),
    "upstream: DNS that changes under load": ("/upstream-dns/", FLAPPING.start, FLAPPING.stop, {"ok"}, 0),
    "upstream: DNS that stops answering": ("/upstream-dns/", lambda: control("/dns/svc.lab/silent"),
                                           lambda: control("/dns/svc.lab/fast"), {"ok"}, 0),
}
# Routes whose victim is itself the fault (a proxy): the "lifted" phase calls the victim directly.
LIFTED_ROUTE = {"/jitter/": "/direct/", "/stall/": "/direct/"}
DEADLINES = {"/direct/": 600, "/big/": 800, "/jitter/": 600, "/stall/": 1500, "/dns/": 600,
             "/upstream/": 600, "/upstream-slow/": 600, "/upstream-dns/": 600}


def one_request(port, path):
    start = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", path, headers={"Connection": "close"})
        r = c.getresponse()
        body = r.read()
        c.close()
        status = r.status
    except OSError:
        return time.monotonic() - start, -1, {}
    try:
        sections = {k: v.get("status") for k, v in json.loads(body).get("sections", {}).items()}
    except (ValueError, AttributeError):
        sections = {}
    return time.monotonic() - start, status, sections


def load(port, route, rps, seconds, during=None):
    """`seconds` of requests at `rps` (each on a new connection); `during` runs `at` seconds in."""
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=64) as pool:
        futures = []
        start = time.monotonic()
        fired = during is None
        n = int(rps * seconds)
        for i in range(n):
            due = start + i / rps
            if not fired and time.monotonic() - start >= during[0]:
                during[1]()
                fired = True
            time.sleep(max(0.0, due - time.monotonic()))
            futures.append(pool.submit(one_request, port, f"{route}{i}"))
        if not fired:
            during[1]()
        results = [f.result() for f in futures]
    return results


def debug_actors(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/debug/actors")
    j = json.loads(c.getresponse().read())
    c.close()
    return j


def snapshot(pid, port):
    """The gateway at rest: waits (at most 20 s) until nothing is in flight and its descriptor
    count holds still for a second (a connection ended with Connection: close lingers up to 1 s
    to drain what its client still sends), then counts."""
    until = time.monotonic() + 20
    fds = lambda: len(os.listdir(f"/proc/{pid}/fd"))
    last = -1
    while True:
        time.sleep(1.0)
        now = fds()  # counted before this probe's own connection exists, a second after the last one's
        j = debug_actors(port)
        quiet = not (j["coordinators"] or j["workers"] or j["downstream_inflight"] or j["connections"] > 1)
        if (now == last and quiet) or time.monotonic() > until:
            break
        last = now
    status = open(f"/proc/{pid}/status").read()
    field = lambda name: int(next(l for l in status.splitlines() if l.startswith(name)).split()[1])
    return {"fds": now, "threads": field("Threads:"), "rss_kb": field("VmRSS:"),
            "actors": j["actors_running"], "coordinators": j["coordinators"], "workers": j["workers"],
            "downstream_inflight": j["downstream_inflight"], "connections": j["connections"]}


def inside(args):
    nginx = downstreams("/tmp/gatherlab-nginx")
    serve_proc = subprocess.Popen([sys.executable, __file__, "serve"], stdout=subprocess.PIPE)
    assert serve_proc.stdout.readline().strip() == b"serving"
    port = 18080
    cfg_path = "/tmp/gatherlab-config.json"
    with open(cfg_path, "w") as f:
        json.dump(lab_config(port), f)
    log = open(args.log, "w")
    gw = subprocess.Popen([args.gather, "serve", "--config", cfg_path], stdout=log, stderr=subprocess.STDOUT)
    rows = []
    try:
        for _ in range(100):
            try:
                debug_actors(port)
                break
            except OSError:
                time.sleep(0.1)
        # Warm-up: every route once, so that threads made at first use (Asio's resolver thread)
        # are there before the first "before" count.
        for route in DEADLINES:
            one_request(port, f"{route}warm")
        names = [n for n in FAULTS if not args.only or any(o.lower() in n.lower() for o in args.only.split(","))]
        for name in names:
            route, start, lift, expected, start_at = FAULTS[name]
            deadline = DEADLINES[route]
            calm = load(port, LIFTED_ROUTE.get(route, route), args.rps, 2)
            before = snapshot(gw.pid, port)
            during = load(port, route, args.rps, args.seconds, during=(start_at, start))
            lift()
            after_route = LIFTED_ROUTE.get(route, route)
            # Normal service once lifted: at most 15 s for the first fully healthy second, then 3 s all healthy.
            recovered_in = None
            t0 = time.monotonic()
            while time.monotonic() - t0 < 15:
                probe = load(port, after_route, args.rps, 1)
                if all(s == 200 and sec.get("victim") == "ok" for _, s, sec in probe):
                    recovered_in = time.monotonic() - t0
                    break
            healthy = load(port, after_route, args.rps, 3)
            after = snapshot(gw.pid, port)
            margin = args.margin_ms / 1000
            late = [lat for lat, _, _ in during + calm + healthy if lat > deadline / 1000 + margin]
            victim = {}
            for _, s, sec in during:
                key = sec.get("victim", f"http {s}")
                victim[key] = victim.get(key, 0) + 1
            others_bad = sum(1 for _, s, sec in during if sec.get("base") != "ok")
            wrong = sum(n for st, n in victim.items() if st not in expected)
            healthy_bad = sum(1 for _, s, sec in healthy if s != 200 or sec.get("victim") != "ok")
            leaks = {k: after[k] - before[k] for k in ("fds", "threads", "actors")}
            row = {"fault": name, "requests": len(calm) + len(during) + len(healthy), "late": len(late),
                   "max_ms": round(1000 * max(lat for lat, _, _ in during + calm + healthy)),
                   "deadline_ms": deadline, "victim": victim, "expected": sorted(expected),
                   "wrong_status": wrong, "base_not_ok": others_bad,
                   "bystander_not_ok": sum(1 for _, _, sec in during if sec.get("bystander", "ok") != "ok"),
                   "recovered_s": None if recovered_in is None else round(recovered_in, 1),
                   "after_lift_not_ok": healthy_bad, "leaks": leaks,
                   "rss_delta_kb": after["rss_kb"] - before["rss_kb"], "before": before, "after": after}
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        nft([])
        tbf(False)
        gw.terminate()
        gw.wait()
        serve_proc.terminate()
        serve_proc.wait()
        nginx.terminate()
        nginx.wait()
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)
    bad = [r for r in rows if r["late"] or r["wrong_status"] or any(v > 0 for v in r["leaks"].values())
           or r["after_lift_not_ok"]
           or r["recovered_s"] is None]
    return 1 if bad else 0


def table(rows, margin_ms):
    print(f"\n| fault | requests | answers late (> deadline + {margin_ms} ms) | slowest / deadline (ms) | victim section "
          "while on | other sections not ok | normal after lift | leaks (fds, threads, actors; RSS) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        victim = ", ".join(f"{k} {v}" for k, v in sorted(r["victim"].items()))
        others = r["base_not_ok"] + r["bystander_not_ok"]
        rec = "never (15 s)" if r["recovered_s"] is None else f"{r['recovered_s']} s"
        lk = r["leaks"]
        print(f"| {r['fault']} | {r['requests']} | {r['late']} | {r['max_ms']} / {r['deadline_ms']} | {victim} | "
              f"{others} | {rec} | {lk['fds']}, {lk['threads']}, {lk['actors']}; {r['rss_delta_kb']:+} kB |")


def host(args):
    if os.geteuid() != 0:
        print("fault lab skipped: it needs root (ip netns, nft, tc)")
        return 77
    for tool in ("ip", "nft", "tc", "nginx"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], stdout=subprocess.DEVNULL).returncode:
            print(f"fault lab skipped: {tool} is not installed (apt-get install iproute2 nftables nginx-light)")
            return 77
    subprocess.run(["ip", "netns", "del", NS], stderr=subprocess.DEVNULL)
    os.makedirs(f"/etc/netns/{NS}", exist_ok=True)
    try:
        # `ip netns exec` bind-mounts this file over /etc/resolv.conf inside the namespace: the
        # gateway's getaddrinfo asks the lab's resolver, and only it.
        with open(f"/etc/netns/{NS}/resolv.conf", "w") as f:
            f.write("nameserver 127.0.0.1\n")
        subprocess.run(["ip", "netns", "add", NS], check=True)
        subprocess.run(["ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up"], check=True)
        argv = [sys.executable, os.path.abspath(__file__), "inside", "--gather", os.path.abspath(args.gather),
                "--rps", str(args.rps), "--seconds", str(args.seconds), "--margin-ms", str(args.margin_ms),
                "--out", os.path.abspath(args.out), "--log", os.path.abspath(args.log)]
        if args.only:
            argv += ["--only", args.only]
        status = subprocess.run(["ip", "netns", "exec", NS, *argv]).returncode
    finally:
        subprocess.run(["ip", "netns", "del", NS], stderr=subprocess.DEVNULL)
        for f in ("resolv.conf",):
            try:
                os.remove(f"/etc/netns/{NS}/{f}")
            except OSError:
                pass
        try:
            os.rmdir(f"/etc/netns/{NS}")
        except OSError:
            pass
    if os.path.exists(args.out):
        with open(args.out) as f:
            table(json.load(f), args.margin_ms)
    print(f"\nverdict: {'every row clean' if status == 0 else 'see the rows above'} (exit {status})")
    return status


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        return serve()
    p = argparse.ArgumentParser()
    p.add_argument("mode", nargs="?", default="host")
    p.add_argument("--gather", required=True)
    p.add_argument("--only", default="")
    p.add_argument("--rps", type=float, default=30)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--margin-ms", type=int, default=250)
    p.add_argument("--out", default="faults.json")
    p.add_argument("--log", default="faults-gateway.log")
    args = p.parse_args()
    return inside(args) if args.mode == "inside" else host(args)


if __name__ == "__main__":
    sys.exit(main())
