#!/usr/bin/env python3
"""The downstream of the valgrind benches (mallocs.sh, callgrind.sh, cache_misses.sh): a threaded
HTTP/1.1 server on 127.0.0.1 that prints its port, then answers every GET with a small JSON body.

  /hang...  never answers (holds the connection ten minutes)
  /dNN...   answers after NN milliseconds
  anything else answers at once
  CHUNKED=1 in the environment: the body is sent chunked (as bench/run.sh's nginx sends it)
"""
import http.server
import os
import re
import time

CHUNKED = os.environ.get("CHUNKED") == "1"
BODY = b'{"id":42,"name":"x"}'


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path.startswith("/hang"):
            time.sleep(600)
            return
        delay = re.match(r"/d(\d+)", self.path)
        if delay:
            time.sleep(int(delay.group(1)) / 1000)
        body = BODY
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if CHUNKED:
            self.send_header("Transfer-Encoding", "chunked")
            body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, *args):
        pass  # the gateway closes hung and timed-out calls: not news


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
