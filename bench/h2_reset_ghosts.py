#!/usr/bin/python3
"""How long an HTTP/2 server counts the streams a client reset against its
MAX_CONCURRENT_STREAMS (docs/performance.md, "The churn fix"). python3-h2, one connection:
N streams of PATH, each reset (CANCEL) after RESET_MS, then WAIT_MS, then N new streams; prints
how many of those the server refused (REFUSED_STREAM) and how many it answered. With --ping a
PING goes, and its answer is awaited, before the new streams.

  bench/h2_reset_ghosts.py PORT WAIT_MS [--ping] [--streams N] [--path /d20] [--reset-ms 5]

Against bench/conf/nginx.conf.in's h2c port (bench/run.sh starts it at NGINX_PORT + 1).
"""
import socket
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.events


def main(args):
    port, wait = int(args.pop(0)), float(args.pop(0)) / 1000
    ping, streams, path, reset_after = False, 128, "/d20", 0.005
    while args:
        flag = args.pop(0)
        if flag == "--ping":
            ping = True
        elif flag == "--streams":
            streams = int(args.pop(0))
        elif flag == "--path":
            path = args.pop(0)
        elif flag == "--reset-ms":
            reset_after = float(args.pop(0)) / 1000
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(0.001)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())

    def pump(seconds):
        events, end = [], time.time() + seconds
        while time.time() < end:
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                break
            events += conn.receive_data(data)
            sock.sendall(conn.data_to_send())
        return events

    def open_streams():
        ids = []
        for _ in range(streams):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":authority", "127.0.0.1"),
                                    (":path", path)], end_stream=True)
            ids.append(sid)
        sock.sendall(conn.data_to_send())
        return ids

    pump(0.05)  # the server's SETTINGS
    first = open_streams()
    pump(reset_after)
    reset = 0
    for sid in first:
        try:
            conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
            reset += 1
        except Exception:  # already answered
            pass
    sock.sendall(conn.data_to_send())
    pump(wait)
    if ping:
        conn.ping(b"ghosts!!")
        sock.sendall(conn.data_to_send())
        pump(0.05)
    open_streams()
    events = pump(0.5)
    refused = sum(1 for e in events if isinstance(e, h2.events.StreamReset) and e.error_code == 7)
    answered = sum(1 for e in events if isinstance(e, h2.events.StreamEnded))
    print("reset %d, waited %d ms%s: refused %d, answered %d" % (reset, wait * 1000, " and a PING" if ping else "",
                                                                 refused, answered))


if __name__ == "__main__":
    main(sys.argv[1:])
