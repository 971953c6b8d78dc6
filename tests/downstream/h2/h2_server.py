#!/usr/bin/python3
"""An HTTP/2 downstream for the client's tests, well-behaved and hostile (Debian's python3-h2 with
hyperframe for the frames h2 would not send). Usage:
  h2_server.py [--max-streams N] [--reset-hold-ms MS] [--tls CERT KEY] [--silent]
Prints "PORT <n>" once listening on 127.0.0.1, then a line per thing a test may wait for:
"CONN <n>" (a connection opened), "REQUEST <conn> <stream> <method> <path>", "RESET <conn>
<stream> <code> <path>" (the client reset a stream), "CLOSED <conn>". --silent: accepts and
reads, never writes a byte (no SETTINGS). --tls: TLS with ALPN h2 only. --reset-hold-ms (with
--max-streams): a stream the client reset still counts against the limit for MS ms after its
RST_STREAM, as a server whose handler goes on does, and a stream beyond the limit is refused
(RST_STREAM REFUSED_STREAM, "REFUSED <conn> <stream>").

What a request gets is chosen by its path (the query is ignored but for k=):
  /item                 200 {"id": 7, "name": "lamp"}
  /echo                 200 {"method", "path", "headers", "body"} of the request
  /delay/MS             /item after MS ms
  /status/CODE          that status, {"status": CODE}
  /hang                 nothing, ever
  /never-ends           a head and part of a body, then nothing
  /big/N                200 with a body of N bytes (under flow control)
  /trailers             head (application/grpc), DATA "abc" and "def", trailers grpc-status 0
  /trailers-only        one HEADERS with grpc-status 5 and END_STREAM
  /stream/N/MS          N DATA chunks "chunk-i;" MS ms apart, then the end
  /rst/POINT/CODE       RST_STREAM CODE at POINT: head (before any), body (after the head),
                        mid (after part of the body)
  /refuse               RST_STREAM REFUSED_STREAM, always
  /refuse-once?k=K      REFUSED_STREAM the first time K is asked, /item after
  /goaway-once?k=K      the first time: GOAWAY with last stream id below this one (the
                        connection closes 1 s later); /item after
  /goaway-error         GOAWAY INTERNAL_ERROR with last stream id this one, then the close
  /goaway-silent        GOAWAY NO_ERROR with last stream id this one, then nothing on it, ever
  /drop                 the connection is closed at once
  /window-flood         100000 WINDOW_UPDATE frames of 1, then /item
  /window-overflow      WINDOW_UPDATE frames that overflow the connection's window
  /bad-status           a :status that is not three digits
  /stats                {"connections": opened so far, "max_open": most streams open at once on
                        one, "refused": streams refused beyond the limit (--reset-hold-ms)}
A gRPC call (a :path under /linkd.v3.) gets what its x-mode metadata names, as a path (any of
the above, e.g. "hang", "status/503", "refuse"), or one of these (a linkd.v3.Book is answered):
  grpc/ok               the message, then trailers grpc-status 0
  grpc/prefix-over      a length prefix of 100 over a shorter message, then grpc-status 0
  grpc/huge-prefix      a 100 MB length prefix and 1000 bytes, then nothing
  grpc/big              one well-formed message of 4096 bytes, then grpc-status 0
  grpc/compressed       the message with the compressed flag set, then grpc-status 0
  grpc/bad-message      bytes that are no Book, then grpc-status 0
  grpc/no-trailers      the message, then END_STREAM on DATA: no grpc-status
  grpc/html             200 text/html and a page
  grpc/never-ends       the head and half a frame, then nothing
  grpc/rst-mid          the head and half a frame, then RST_STREAM INTERNAL_ERROR
  grpc/rst-after        the whole message, then RST_STREAM NO_ERROR (no trailers)
"""

import asyncio
import json
import ssl
import sys

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from hyperframe.frame import GoAwayFrame, WindowUpdateFrame

STATE = {"connections": 0, "max_open": 0, "refused": 0, "seen": set()}
MAX_STREAMS = None
RESET_HOLD = None  # seconds a reset stream still counts (--reset-hold-ms)


def say(*words):
    print(*words, flush=True)


class Downstream(asyncio.Protocol):
    def connection_made(self, transport):
        STATE["connections"] += 1
        self.n = STATE["connections"]
        self.transport = transport
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8",
                                           validate_outbound_headers=False)
        self.conn = h2.connection.H2Connection(config=config)
        if MAX_STREAMS is not None:
            self.conn.local_settings = h2.settings.Settings(
                client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS})
        self.conn.initiate_connection()
        self.streams = {}  # id -> {"headers", "body", "path"}
        self.ghosts = []  # when each stream the client reset stops counting (--reset-hold-ms)
        self.window_open = asyncio.Event()
        self.closed = False
        say("CONN", self.n)
        self.flush()

    def connection_lost(self, exc):
        self.closed = True
        self.window_open.set()
        say("CLOSED", self.n)

    def flush(self):
        if not self.closed:
            data = self.conn.data_to_send()
            if data:
                self.transport.write(data)

    def data_received(self, data):
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.flush()
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                if self.over_limit():
                    STATE["refused"] += 1
                    self.conn.reset_stream(event.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
                    say("REFUSED", self.n, event.stream_id)
                    continue
                headers = dict(event.headers)
                self.streams[event.stream_id] = {"headers": event.headers, "body": b"",
                                                 "path": headers.get(":path", "")}
                STATE["max_open"] = max(STATE["max_open"], len(self.streams))
                say("REQUEST", self.n, event.stream_id, headers.get(":method"), headers.get(":path"))
                if event.stream_ended:
                    self.start(event.stream_id)
            elif isinstance(event, h2.events.DataReceived):
                if event.stream_id in self.streams:
                    self.streams[event.stream_id]["body"] += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.start(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                stream = self.streams.pop(event.stream_id, None)
                if stream is not None and RESET_HOLD is not None:
                    self.ghosts.append(asyncio.get_running_loop().time() + RESET_HOLD)
                say("RESET", self.n, event.stream_id, int(event.error_code), (stream or {}).get("path", ""))
            elif isinstance(event, h2.events.WindowUpdated):
                self.window_open.set()
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.transport.close()
        self.flush()

    def over_limit(self):
        if RESET_HOLD is None or MAX_STREAMS is None:
            return False
        now = asyncio.get_running_loop().time()
        self.ghosts = [t for t in self.ghosts if t > now]
        return len(self.streams) + len(self.ghosts) >= MAX_STREAMS

    def start(self, stream_id):
        asyncio.ensure_future(self.answer(stream_id))

    def open(self, stream_id):
        return not self.closed and stream_id in self.streams

    def done(self, stream_id):
        self.streams.pop(stream_id, None)

    def head(self, stream_id, status, extra=(), end=False, content_type="application/json"):
        self.conn.send_headers(stream_id, [(":status", str(status)), ("content-type", content_type)] + list(extra),
                               end_stream=end)
        if end:
            self.done(stream_id)
        self.flush()

    async def body(self, stream_id, data, end=True):
        while data:
            if not self.open(stream_id):
                return
            room = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
            if room <= 0:
                self.window_open.clear()
                await self.window_open.wait()
                continue
            self.conn.send_data(stream_id, data[:room])
            data = data[room:]
            self.flush()
        if end and self.open(stream_id):
            self.conn.end_stream(stream_id)
            self.done(stream_id)
            self.flush()

    async def item(self, stream_id):
        self.head(stream_id, 200)
        await self.body(stream_id, b'{"id": 7, "name": "lamp"}')

    def reset(self, stream_id, code):
        self.conn.reset_stream(stream_id, code)
        self.done(stream_id)
        self.flush()

    def raw(self, frame):
        self.transport.write(frame.serialize())

    async def answer(self, stream_id):
        if not self.open(stream_id):
            return
        request = self.streams[stream_id]
        path, _, query = request["path"].partition("?")
        if path.startswith("/linkd.v3."):  # a gRPC call: what it gets is its x-mode metadata
            path = "/" + dict(request["headers"]).get("x-mode", "grpc/ok")
        key = dict(p.partition("=")[::2] for p in query.split("&") if p).get("k", "")
        parts = path.strip("/").split("/")
        what = parts[0]
        if what == "item":
            await self.item(stream_id)
        elif what == "echo":
            self.head(stream_id, 200)
            await self.body(stream_id, json.dumps({
                "method": dict(request["headers"]).get(":method"), "path": request["path"],
                "headers": [list(h) for h in request["headers"]],
                "body": request["body"].decode("utf-8", "replace")}).encode())
        elif what == "delay":
            await asyncio.sleep(int(parts[1]) / 1000)
            if self.open(stream_id):
                await self.item(stream_id)
        elif what == "status":
            self.head(stream_id, int(parts[1]))
            await self.body(stream_id, json.dumps({"status": int(parts[1])}).encode())
        elif what == "hang":
            return
        elif what == "never-ends":
            self.head(stream_id, 200)
            await self.body(stream_id, b'{"a": ', end=False)
        elif what == "big":
            self.head(stream_id, 200)
            await self.body(stream_id, b'"' + b"x" * (int(parts[1]) - 2) + b'"')
        elif what == "trailers":
            self.head(stream_id, 200, content_type="application/grpc")
            await self.body(stream_id, b"abc", end=False)
            await self.body(stream_id, b"def", end=False)
            if self.open(stream_id):
                self.conn.send_headers(stream_id, [("grpc-status", "0"), ("grpc-message", "ok")], end_stream=True)
                self.done(stream_id)
                self.flush()
        elif what == "trailers-only":
            self.head(stream_id, 200, [("grpc-status", "5"), ("grpc-message", "no such book")], end=True,
                      content_type="application/grpc")
        elif what == "stream":
            self.head(stream_id, 200)
            for i in range(int(parts[1])):
                if i:
                    await asyncio.sleep(int(parts[2]) / 1000)
                await self.body(stream_id, b"chunk-%d;" % i, end=False)
            await self.body(stream_id, b"", end=True)
        elif what == "rst":
            point, code = parts[1], int(parts[2])
            if point in ("body", "mid"):
                self.head(stream_id, 200)
            if point == "mid":
                await self.body(stream_id, b'{"a": 1', end=False)
            self.reset(stream_id, code)
        elif what == "refuse" or (what == "refuse-once" and ("r", key) not in STATE["seen"]):
            STATE["seen"].add(("r", key))
            self.reset(stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
        elif what == "goaway-once" and ("g", key) not in STATE["seen"]:
            STATE["seen"].add(("g", key))
            # Raw: python3-h2 sends nothing more after its own GOAWAY, and the streams below go on.
            self.raw(GoAwayFrame(0, last_stream_id=stream_id - 2, error_code=0))
            await asyncio.sleep(1)
            self.transport.close()
        elif what == "goaway-error":
            self.raw(GoAwayFrame(0, last_stream_id=stream_id, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR))
            self.transport.close()
        elif what == "goaway-silent":
            self.raw(GoAwayFrame(0, last_stream_id=stream_id, error_code=0))
        elif what == "drop":
            self.transport.abort()
        elif what == "window-flood":
            self.transport.write(WindowUpdateFrame(0, window_increment=1).serialize() * 100000)
            await self.item(stream_id)
        elif what == "window-overflow":
            self.raw(WindowUpdateFrame(0, window_increment=0x7FFFFFFF))
            self.raw(WindowUpdateFrame(0, window_increment=0x7FFFFFFF))
        elif what == "bad-status":
            self.conn.send_headers(stream_id, [(":status", "abc")], end_stream=False)
            self.flush()
        elif what == "grpc":
            await self.grpc(stream_id, parts[1])
        elif what == "stats":
            self.head(stream_id, 200)
            await self.body(stream_id, json.dumps({"connections": STATE["connections"],
                                                   "max_open": STATE["max_open"],
                                                   "refused": STATE["refused"]}).encode())
        else:  # refuse-once / goaway-once the second time, and anything else
            await self.item(stream_id)


    async def grpc(self, stream_id, kind):
        book = b"\x0a\x011\x12\x04Lamp"  # linkd.v3.Book {isbn: "1", title: "Lamp"}

        def frame(message, flag=0, length=None):
            return bytes([flag]) + (len(message) if length is None else length).to_bytes(4, "big") + message

        async def trailers():
            if self.open(stream_id):
                self.conn.send_headers(stream_id, [("grpc-status", "0")], end_stream=True)
                self.done(stream_id)
                self.flush()

        if kind == "html":
            self.head(stream_id, 200, content_type="text/html")
            await self.body(stream_id, b"<html><body>Bad gateway</body></html>")
            return
        self.head(stream_id, 200, content_type="application/grpc")
        if kind == "ok":
            await self.body(stream_id, frame(book), end=False)
            await trailers()
        elif kind == "prefix-over":
            await self.body(stream_id, frame(book, length=100), end=False)
            await trailers()
        elif kind == "huge-prefix":
            await self.body(stream_id, frame(b"x" * 1000, length=100 * 1024 * 1024), end=False)
        elif kind == "big":
            title = b"x" * 4090
            await self.body(stream_id, frame(b"\x12" + bytes([0x80 | (len(title) & 0x7F), len(title) >> 7]) + title),
                            end=False)
            await trailers()
        elif kind == "compressed":
            await self.body(stream_id, frame(book, flag=1), end=False)
            await trailers()
        elif kind == "bad-message":
            await self.body(stream_id, frame(b"\xff\xff\xff\xff"), end=False)
            await trailers()
        elif kind == "no-trailers":
            await self.body(stream_id, frame(book), end=True)
        elif kind == "never-ends":
            await self.body(stream_id, frame(book)[:6], end=False)
        elif kind == "rst-mid":
            await self.body(stream_id, frame(book)[:6], end=False)
            self.reset(stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
        elif kind == "rst-after":
            await self.body(stream_id, frame(book), end=False)
            self.reset(stream_id, h2.errors.ErrorCodes.NO_ERROR)


class Silent(asyncio.Protocol):
    def connection_made(self, transport):
        STATE["connections"] += 1
        say("CONN", STATE["connections"])

    def data_received(self, data):
        pass


async def main(args):
    global MAX_STREAMS, RESET_HOLD
    tls = None
    silent = False
    while args:
        flag = args.pop(0)
        if flag == "--max-streams":
            MAX_STREAMS = int(args.pop(0))
        elif flag == "--reset-hold-ms":
            RESET_HOLD = int(args.pop(0)) / 1000
        elif flag == "--tls":
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.load_cert_chain(args.pop(0), args.pop(0))
            tls.set_alpn_protocols(["h2"])
        elif flag == "--silent":
            silent = True
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Silent if silent else Downstream, "127.0.0.1", 0, ssl=tls)
    say("PORT", server.sockets[0].getsockname()[1])
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
