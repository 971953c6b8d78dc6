"""What the Python benchmarks share (bench/shared_accuracy.py, bench/shared_cache.py,
bench/shared_failure.py, bench/grpc_threads.py): free loopback ports, `gather serve` processes, a
private redis-server, the benchmarks' nginx (bench/conf/nginx.conf.in)."""
import contextlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    """A loopback TCP port nobody listens on right now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_gateway(gather, cfg, stderr=subprocess.DEVNULL):
    """`gather serve` on `cfg` (written to a temporary file): the process and its port, once it
    printed its "listening on" line. `stderr`: where its log lines go (subprocess.PIPE: p.stderr)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
    p = subprocess.Popen([gather, "serve", "--config", f.name], stdout=subprocess.PIPE,
                         stderr=stderr, text=True)
    line = p.stdout.readline()
    return p, int(line.rsplit(":", 1)[1])


def sample(text, series):
    """The value of `series` (name with its labels, as the exposition writes it) in a scrape; None
    when absent."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


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


@contextlib.contextmanager
def nginx_downstream():
    """The benchmarks' nginx (bench/conf/nginx.conf.in: /instant, /d20, /hang...) in a temporary
    prefix, never the system service; yields its base URL once it answers."""
    prefix = tempfile.mkdtemp(prefix="gather-nginx.")
    os.makedirs(prefix + "/tmp")
    os.makedirs(prefix + "/www")
    os.chmod(prefix, 0o755)
    port = free_port()
    with open(ROOT + "/bench/conf/nginx.conf.in") as f:
        conf = f.read().replace("@PREFIX@", prefix).replace("@PORT@", str(port))
    conf = conf.replace("@H2PORT@", str(free_port()))
    with open(prefix + "/nginx.conf", "w") as f:
        f.write(conf)
    nginx = subprocess.Popen(["nginx", "-p", prefix, "-c", prefix + "/nginx.conf", "-e", prefix + "/error.log"])
    base = "http://127.0.0.1:%d" % port
    try:
        for _ in range(100):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(base + "/instant", timeout=1).read()
                break
            time.sleep(0.05)
        else:
            raise SystemExit("nginx did not start (nginx-light and libnginx-mod-http-echo installed?)")
        yield base
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(prefix, ignore_errors=True)
