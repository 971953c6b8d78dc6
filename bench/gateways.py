"""What the Python benchmarks of several gateways share (bench/shared_accuracy.py,
bench/shared_cache.py): free loopback ports, `gather serve` processes, a private redis-server."""
import contextlib
import http.client
import json
import socket
import subprocess
import tempfile
import time


def free_port():
    """A loopback TCP port nobody listens on right now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_gateway(gather, cfg):
    """`gather serve` on `cfg` (written to a temporary file): the process and its port, once it
    printed its "listening on" line."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
    p = subprocess.Popen([gather, "serve", "--config", f.name], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    return p, int(line.rsplit(":", 1)[1])


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("GET", "/metrics")
    return c.getresponse().read().decode()


@contextlib.contextmanager
def redis_server():
    """redis-server on 127.0.0.1, a free port, no persistence; yields the port once it answers."""
    port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--logfile", ""], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                break
            time.sleep(0.05)
        else:
            raise SystemExit("redis-server did not start")
        yield port
    finally:
        redis.terminate()
        redis.wait()
