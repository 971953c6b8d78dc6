#!/usr/bin/python3
"""A DNS stand-in for the tests (python3-dnslib): UDP and TCP on one port of 127.0.0.1, answering
from a JSON zone file the test writes and may rewrite at any time (read again at every query).

    /usr/bin/python3 dns_server.py ZONE_FILE

The zone file:
    {"silent": false,                      true: read every query, answer none (a dead server)
     "names": {"svc.test": {"A": ["127.0.0.2"], "AAAA": ["::1"],
                            "A_count": 10000,   that many A records more (10.x.y.z), as many as
                                                one DNS message can carry (about 4,000 over TCP)
                            "SRV": [{"priority": 1, "weight": 5, "port": 8080, "target": "a.test"}],
                            "fail": true}}}      SERVFAIL for this name
A name absent from "names" is NXDOMAIN; a type it lacks, an empty answer (NODATA).
Over UDP an answer over 512 bytes (or the query's EDNS size) goes back truncated (TC), as a real
server does, so the client asks again over TCP.

Prints "port N" once both sockets listen, then "query NAME TYPE" for each query it reads.
"""

import ipaddress
import json
import socket
import struct
import sys
import threading

from dnslib import AAAA, A, DNSRecord, QTYPE, RCODE, RR, SRV

ZONE = sys.argv[1]
TCP_MAX = 65535


def load_zone():
    try:
        with open(ZONE) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"names": {}}


def generated(count):
    base = int(ipaddress.IPv4Address("10.0.0.0"))
    return [str(ipaddress.IPv4Address(base + 1 + i)) for i in range(count)]


def answer(request, zone, limit):
    """The reply's bytes, at most `limit` long; None when the server stays silent."""
    q = request.q
    name = str(q.qname).rstrip(".").lower()
    qtype = QTYPE[q.qtype]
    # One write per line: the UDP and TCP threads print at once.
    sys.stdout.write(f"query {name} {qtype}\n")
    sys.stdout.flush()
    if zone.get("silent"):
        return None
    reply = request.reply()
    entry = zone.get("names", {}).get(name)
    if entry is None:
        reply.header.rcode = RCODE.NXDOMAIN
        return reply.pack()
    if entry.get("fail"):
        reply.header.rcode = RCODE.SERVFAIL
        return reply.pack()
    records = []
    if qtype == "A":
        addresses = entry.get("A", []) + generated(entry.get("A_count", 0))
        records = [RR(q.qname, QTYPE.A, rdata=A(a), ttl=5) for a in addresses]
    elif qtype == "AAAA":
        records = [RR(q.qname, QTYPE.AAAA, rdata=AAAA(a), ttl=5) for a in entry.get("AAAA", [])]
    elif qtype == "SRV":
        records = [RR(q.qname, QTYPE.SRV, ttl=5,
                      rdata=SRV(priority=r["priority"], weight=r["weight"], port=r["port"],
                                target=r["target"]))
                   for r in entry.get("SRV", [])]
    for rr in records:
        reply.add_answer(rr)
    data = reply.pack()
    if len(data) <= limit:
        return data
    if limit < TCP_MAX:  # UDP: truncated, the client comes back over TCP
        reply.rr = []
        reply.header.tc = 1
        return reply.pack()
    # TCP: as many records as one message carries (a name's first ones).
    low, high = 0, len(records)
    while low < high:
        middle = (low + high + 1) // 2
        reply.rr = records[:middle]
        if len(reply.pack()) <= limit:
            low = middle
        else:
            high = middle - 1
    reply.rr = records[:low]
    return reply.pack()


def serve_udp(sock):
    while True:
        data, peer = sock.recvfrom(4096)
        try:
            request = DNSRecord.parse(data)
        except Exception:
            continue
        limit = 512
        for rr in request.ar:
            if rr.rtype == QTYPE.OPT:
                limit = max(512, rr.rclass)
        reply = answer(request, load_zone(), limit)
        if reply is not None:
            sock.sendto(reply, peer)


def serve_tcp_client(conn):
    with conn:
        while True:
            head = conn.recv(2, socket.MSG_WAITALL)
            if len(head) < 2:
                return
            (length,) = struct.unpack("!H", head)
            data = conn.recv(length, socket.MSG_WAITALL)
            try:
                request = DNSRecord.parse(data)
            except Exception:
                return
            reply = answer(request, load_zone(), TCP_MAX)
            if reply is not None:
                conn.sendall(struct.pack("!H", len(reply)) + reply)


def serve_tcp(sock):
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=serve_tcp_client, args=(conn,), daemon=True).start()


def main():
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # One port for both: take a TCP port of the system's choice, then the same number in UDP
    # (a few tries: another process may hold that UDP port).
    for _ in range(50):
        tcp.bind(("127.0.0.1", 0))
        port = tcp.getsockname()[1]
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            udp.bind(("127.0.0.1", port))
            break
        except OSError:
            udp.close()
            tcp.close()
            tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    else:
        sys.exit("no port free in both UDP and TCP")
    tcp.listen(64)
    threading.Thread(target=serve_tcp, args=(tcp,), daemon=True).start()
    print("port", port, flush=True)
    serve_udp(udp)


if __name__ == "__main__":
    main()
