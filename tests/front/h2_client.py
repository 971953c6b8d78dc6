#!/usr/bin/python3
"""HTTP/2 clients for the front's tests, well-behaved and hostile, at frame level (Debian's
python3-h2 with its hpack and hyperframe). Usage: h2_client.py [--tls CAFILE] CASE PORT [ARGS...].
Each case prints one JSON object on its last line of stdout: what it saw (statuses, the GOAWAY's
error code, times), which the C++ test checks. A case never sleeps to wait for the gateway: it
reads frames. With --tls every connection is TLS, verified against CAFILE, and must get h2 by ALPN
(as a browser's would); without it, h2c by prior knowledge."""

import json
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings
import hpack
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame,
                              PingFrame, RstStreamFrame, SettingsFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
CANCEL, REFUSED_STREAM, PROTOCOL_ERROR, ENHANCE_YOUR_CALM = 0x8, 0x7, 0x1, 0xB
TLS = None  # an ssl.SSLContext offering only h2, with --tls
# What a read may raise when the server (or the kernel) ends the connection: over TLS an end
# without close_notify is an ssl.SSLError, not a ConnectionError.
GONE = (ConnectionError, ssl.SSLError)


def now_ms():
    return time.monotonic() * 1000.0


def connect(port, timeout=10.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if TLS is None:
        return s
    s = TLS.wrap_socket(s, server_hostname="127.0.0.1")
    if s.selected_alpn_protocol() != "h2":
        sys.exit("ALPN chose %r, not h2" % s.selected_alpn_protocol())
    return s


def request_headers(path, method="GET", extra=()):
    return [(":method", method), (":path", path), (":scheme", "http" if TLS is None else "https"),
            (":authority", "127.0.0.1")] + list(extra)


class client:
    """A well-behaved client on python3-h2."""

    def __init__(self, port, settings=None):
        self.sock = connect(port)
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        if settings:
            self.conn.update_settings(settings)
        self.flush()
        self.answers = {}  # stream id -> {"status", "headers", "body", "ended", "reset"}
        self.goaway = None
        self.closed = False
        self.on_data = None  # called with (stream id, bytes) as each DATA frame is read

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def get(self, path, method="GET", extra=(), body=None):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, request_headers(path, method, extra), end_stream=body is None)
        if body is not None:
            self.conn.send_data(sid, body, end_stream=True)
        self.answers[sid] = {"status": None, "headers": {}, "body": b"", "ended": False, "reset": None}
        self.flush()
        return sid

    def pump(self, done, limit_ms=10000):
        """Reads and handles frames until done() or the connection ends or limit_ms passes."""
        end = now_ms() + limit_ms
        while not done() and not self.closed and now_ms() < end:
            self.sock.settimeout(max(0.01, (end - now_ms()) / 1000.0))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                break
            except GONE:
                self.closed = True
                break
            if not data:
                self.closed = True
                break
            for event in self.conn.receive_data(data):
                self.handle(event)
            self.flush()

    def handle(self, event):
        if isinstance(event, h2.events.ResponseReceived):
            a = self.answers[event.stream_id]
            a["headers"] = dict(event.headers)
            a["status"] = int(a["headers"][":status"])
        elif isinstance(event, h2.events.DataReceived):
            self.answers[event.stream_id]["body"] += event.data
            # Whether this frame carried END_STREAM: a progressive answer's last line ends it.
            self.answers[event.stream_id].setdefault("frames", []).append(
                (now_ms(), event.data, event.stream_ended is not None))
            if self.on_data:
                self.on_data(event.stream_id, event.data)
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self.answers[event.stream_id]["ended"] = True
        elif isinstance(event, h2.events.StreamReset):
            if event.stream_id in self.answers:
                self.answers[event.stream_id]["reset"] = int(event.error_code)
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = int(event.error_code)

    def finished(self, sid):
        a = self.answers[sid]
        return a["ended"] or a["reset"] is not None

    def answer_of(self, sid):
        a = self.answers[sid]
        return {"status": a["status"], "body": a["body"].decode("utf-8", "replace"),
                "reset": a["reset"], "headers": a["headers"]}


def normal_request(port, path):
    """A fresh connection's GET: its answer and how long it took."""
    start = now_ms()
    c = client(port)
    sid = c.get(path)
    c.pump(lambda: c.finished(sid))
    out = c.answer_of(sid)
    out["ms"] = now_ms() - start
    c.sock.close()
    return out


class raw:
    """A client that writes frames as it likes (no state machine to stop it)."""

    def __init__(self, port, settings=None):
        self.sock = connect(port)
        self.enc = hpack.Encoder()
        first = SettingsFrame(0)
        if settings:
            first.settings = settings
        self.send(PREFACE + first.serialize())
        self.buffer = b""

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except GONE:
            return False

    def headers(self, sid, path, method="GET", end_stream=True, extra=()):
        f = HeadersFrame(sid)
        f.data = self.enc.encode(request_headers(path, method, extra))
        f.flags.add("END_HEADERS")
        if end_stream:
            f.flags.add("END_STREAM")
        return f.serialize()

    def frames(self, limit_ms=10000):
        """Yields the frames the server sends until it closes, or limit_ms passes."""
        end = now_ms() + limit_ms
        while now_ms() < end:
            while len(self.buffer) >= 9:
                frame, length = Frame.parse_frame_header(memoryview(self.buffer[:9]))
                if len(self.buffer) < 9 + length:
                    break
                frame.parse_body(memoryview(self.buffer[9:9 + length]))
                self.buffer = self.buffer[9 + length:]
                yield frame
            self.sock.settimeout(max(0.01, (end - now_ms()) / 1000.0))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return
            except GONE:
                return
            if not data:
                return
            self.buffer += data

    def until_goaway(self, limit_ms=10000):
        """The GOAWAY's error code (None when the connection ended without one), and what else came."""
        seen = {"goaway": None, "closed": False, "rst": {}, "statuses": {}}
        for f in self.frames(limit_ms):
            if isinstance(f, GoAwayFrame):
                seen["goaway"] = f.error_code
                seen["last_stream_id"] = f.last_stream_id
            elif isinstance(f, RstStreamFrame):
                seen["rst"][f.stream_id] = f.error_code
            elif isinstance(f, SettingsFrame) and "ACK" not in f.flags:
                self.send(SettingsFrame(0, flags=["ACK"]).serialize())
        else:
            seen["closed"] = True
        return seen


# ---- the cases -----------------------------------------------------------------------------------

def case_get(port, path, count="1"):
    """`count` GETs of `path` at once on one connection: statuses, bodies and the time for all."""
    start = now_ms()
    c = client(port)
    sids = [c.get(path) for _ in range(int(count))]
    c.pump(lambda: all(c.finished(s) for s in sids), 20000)
    answers = [c.answer_of(s) for s in sids]
    return {"ms": now_ms() - start, "statuses": [a["status"] for a in answers],
            "bodies": [a["body"] for a in answers], "headers": answers[0]["headers"]}


def case_reset(port, hang_path, ok_path):
    """GET hang_path, wait until the gateway has a downstream call in flight (read from
    /debug/actors on the same connection), reset the stream, then GET ok_path on the same
    connection."""
    c = client(port)
    sid = c.get(hang_path)
    inflight = 0
    end = now_ms() + 10000
    while inflight < 1 and now_ms() < end:
        probe = c.get("/debug/actors")
        c.pump(lambda: c.finished(probe))
        inflight = json.loads(c.answers[probe]["body"] or b"{}").get("downstream_inflight", 0)
    c.conn.reset_stream(sid, error_code=CANCEL)
    c.flush()
    after = c.get(ok_path)
    c.pump(lambda: c.finished(after))
    return {"inflight_before_reset": inflight, "after": c.answer_of(after), "goaway": c.goaway,
            "closed": c.closed}


def case_refuse(port, path, count, limit):
    """`count` requests sent before the server's SETTINGS are read (so the client's own limit does
    not stop them): which streams are refused, and how. Reads until `count - limit` are refused."""
    r = raw(port)
    data = b"".join(r.headers(1 + 2 * i, path) for i in range(int(count)))
    r.send(data)
    refused = {}
    statuses = {}
    for f in r.frames(3000):
        if isinstance(f, RstStreamFrame):
            refused[f.stream_id] = f.error_code
        elif isinstance(f, HeadersFrame):
            statuses[f.stream_id] = True
        if len(refused) >= int(count) - int(limit):
            break
    r.sock.close()
    return {"refused": len(refused), "codes": sorted(set(refused.values())), "answered": len(statuses)}


def case_goaway_then_requests(port, path):
    """Stream 1, then the client's own GOAWAY, then streams 3 and 5, in one write: which streams
    get an answer (HEADERS), which a reset, until the server closes the connection."""
    r = raw(port)
    r.send(r.headers(1, path) + GoAwayFrame(0, last_stream_id=0).serialize() +
           r.headers(3, path) + r.headers(5, path))
    answered, reset = [], {}
    for f in r.frames(5000):
        if isinstance(f, HeadersFrame):
            answered.append(f.stream_id)
        elif isinstance(f, RstStreamFrame):
            reset[str(f.stream_id)] = f.error_code
    r.sock.close()
    return {"answered": sorted(answered), "reset": reset}


def case_rapid_reset(port, path, count):
    """HEADERS then RST_STREAM(CANCEL) for `count` streams, as fast as they can be written."""
    r = raw(port)
    batch = bytearray()
    sent = 0
    for i in range(int(count)):
        sid = 1 + 2 * i
        batch += r.headers(sid, path)
        rst = RstStreamFrame(sid)
        rst.error_code = CANCEL
        batch += rst.serialize()
        if len(batch) > 16384:
            if not r.send(bytes(batch)):
                break
            sent = i + 1
            batch.clear()
    else:
        if r.send(bytes(batch)):
            sent = int(count)
    seen = r.until_goaway()
    return {"sent": sent, "goaway": seen["goaway"], "closed": seen["closed"]}


def case_continuation_flood(port, path, frames):
    """One HEADERS without END_HEADERS, then `frames` CONTINUATION frames of a few bytes each."""
    r = raw(port)
    block = r.enc.encode(request_headers(path) + [("x-filler-%d" % i, "v" * 20) for i in range(int(frames))])
    piece = max(1, len(block) // (int(frames) + 1))
    h = HeadersFrame(1)
    h.data = block[:piece]
    h.flags.add("END_STREAM")
    data = bytearray(h.serialize())
    at = piece
    for i in range(int(frames)):
        c = ContinuationFrame(1)
        c.data = block[at:at + piece] if i + 1 < int(frames) else block[at:]
        at += piece
        if i + 1 == int(frames):
            c.flags.add("END_HEADERS")
        data += c.serialize()
    r.send(bytes(data))
    seen = r.until_goaway()
    return {"goaway": seen["goaway"], "closed": seen["closed"]}


def case_big_headers(port, path, size):
    """A header list of about `size` bytes within few frames: answered 431 while possible."""
    c = client(port)
    sid = c.get(path, extra=[("x-big-%d" % i, "v" * 1000) for i in range(int(size) // 1032 + 1)])
    c.pump(lambda: c.finished(sid))
    return {"answer": c.answer_of(sid), "goaway": c.goaway}


def case_flood(port, kind, count):
    """`count` PING or SETTINGS frames in one write, never reading."""
    r = raw(port)
    data = bytearray()
    for i in range(int(count)):
        if kind == "ping":
            data += PingFrame(0, opaque_data=i.to_bytes(8, "big")).serialize()
        else:
            data += SettingsFrame(0, settings={SettingsFrame.MAX_CONCURRENT_STREAMS: 100}).serialize()
    r.send(bytes(data))
    seen = r.until_goaway()
    return {"goaway": seen["goaway"], "closed": seen["closed"]}


def case_window_stall(port, path):
    """Says its window is 0 (SETTINGS_INITIAL_WINDOW_SIZE), asks, reads frames but never opens
    the window: the answer's DATA can never be sent."""
    start = now_ms()
    r = raw(port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    r.send(r.headers(1, path))
    seen = r.until_goaway(20000)
    return {"goaway": seen["goaway"], "closed": seen["closed"], "ms": now_ms() - start}


def case_socket_stall(port, path, count):
    """Asks for `count` answers and never reads the socket at all. Says "sent" and then holds the
    connection until the test ends this process (the test watches the gateway meanwhile)."""
    r = raw(port)
    r.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    r.send(b"".join(r.headers(1 + 2 * i, path) for i in range(int(count))))
    print("sent", flush=True)
    time.sleep(60)  # a client that never reads, for as long as the test wants it
    return {}


def case_incomplete(port, path):
    """A POST whose body never comes."""
    start = now_ms()
    r = raw(port)
    r.send(r.headers(1, path, method="POST", end_stream=False,
                     extra=[("content-type", "application/json")]))
    seen = r.until_goaway(20000)
    return {"goaway": seen["goaway"], "closed": seen["closed"], "ms": now_ms() - start}


def case_ask(port, method, path, headers="{}", body=None):
    """One request with `headers` (a JSON object) and `body` if given: its status, headers, and
    each DATA frame as it arrived (ms since the request was sent, the bytes in hex), so the test
    can time and decode a progressive answer frame by frame. Each DATA frame is also announced as
    it comes ("data STREAM BYTES" on its own line), so a test can act on the first part of an
    answer while the rest is still to come."""
    c = client(port)
    c.on_data = lambda sid, data: print("data", sid, len(data), flush=True)
    start = now_ms()
    sid = c.get(path, method=method, extra=list(json.loads(headers).items()),
                body=None if body is None else body.encode("utf-8"))
    c.pump(lambda: c.finished(sid), 15000)
    a = c.answers[sid]
    return {"status": a["status"], "headers": a["headers"], "ended": a["ended"], "reset": a["reset"],
            "ms": now_ms() - start,
            "frames": [{"ms": at - start, "hex": data.hex(), "end_stream": end}
                       for at, data, end in a.get("frames", [])]}


def case_stream_stall(port, path, headers="{}"):
    """Asks for a progressive answer with its window at 0 (SETTINGS_INITIAL_WINDOW_SIZE) and never
    opens it. Says "open" once the answer's HEADERS came, then reads frames until the stream is
    reset (or 15 s pass)."""
    r = raw(port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    r.send(r.headers(1, path, extra=list(json.loads(headers).items())))
    seen = {"rst": None, "data_bytes": 0, "goaway": None}
    for f in r.frames(15000):
        if isinstance(f, HeadersFrame) and f.stream_id == 1:
            print("open", flush=True)
        elif isinstance(f, DataFrame):
            seen["data_bytes"] += len(f.data)
        elif isinstance(f, RstStreamFrame) and f.stream_id == 1:
            seen["rst"] = f.error_code
            break
        elif isinstance(f, GoAwayFrame):
            seen["goaway"] = f.error_code
        elif isinstance(f, SettingsFrame) and "ACK" not in f.flags:
            r.send(SettingsFrame(0, flags=["ACK"]).serialize())
    return seen


def case_pipeline(port, prefix, count, segmented, seed):
    """`count` GETs of prefix + i on one connection, every HEADERS frame written before any answer
    is read: all in one write, or (segmented "1") in random segments of 1..700 bytes with pauses
    of up to 0.3 ms. Each request has its own x-request-id, an x-api-key of 0..7,000 bytes and an
    x-tenant from a few values, so that the HPACK dynamic table keeps evicting. Per request, in
    order: the status, the x-request-id answered and the answer's body."""
    import random
    rng = random.Random(int(seed))
    c = client(port)
    c.pump(lambda: False, 50)  # the server's SETTINGS (its limits) before the burst
    sids = []
    for i in range(int(count)):
        key = "k-%d-" % i + "a" * rng.choice([0, 10, 300, 1500, 4000, 7000])
        extra = [("x-request-id", "h2-%d" % i), ("x-api-key", key),
                 ("x-tenant", "t%d" % rng.randrange(6))]
        sid = c.conn.get_next_available_stream_id()
        c.conn.send_headers(sid, request_headers(prefix + str(i), "GET", extra), end_stream=True)
        c.answers[sid] = {"status": None, "headers": {}, "body": b"", "ended": False, "reset": None}
        sids.append(sid)
    data = c.conn.data_to_send()
    if segmented == "1":
        at = 0
        while at < len(data):
            n = rng.randint(1, 700)
            c.sock.sendall(data[at:at + n])
            at += n
            time.sleep(rng.random() * 0.0003)
    else:
        c.sock.sendall(data)
    c.pump(lambda: all(c.finished(s) for s in sids), 30000)
    out = []
    for s in sids:
        a = c.answer_of(s)
        out.append({"status": a["status"], "request_id": a["headers"].get("x-request-id"),
                    "body": a["body"]})
    return {"answers": out}


CASES = {
    "get": case_get, "reset": case_reset, "refuse": case_refuse, "rapid_reset": case_rapid_reset,
    "continuation_flood": case_continuation_flood, "big_headers": case_big_headers,
    "flood": case_flood, "window_stall": case_window_stall, "socket_stall": case_socket_stall,
    "incomplete": case_incomplete, "ask": case_ask, "stream_stall": case_stream_stall,
    "pipeline": case_pipeline, "goaway_then_requests": case_goaway_then_requests,
}

if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[0] == "--tls":
        TLS = ssl.create_default_context(cafile=argv[1])
        TLS.set_alpn_protocols(["h2"])
        argv = argv[2:]
    name, port, args = argv[0], int(argv[1]), argv[2:]
    if name == "normal":
        print(json.dumps(normal_request(port, args[0])))
    else:
        print(json.dumps(CASES[name](port, *args)))
