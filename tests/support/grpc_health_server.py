#!/usr/bin/python3
"""A real grpc.health.v1 server for the tests (Debian's grpcio, asyncio; Debian has no
grpcio-health-checking, so Health/Check is written here, its two messages by hand).

    /usr/bin/python3 grpc_health_server.py STATUSES

STATUSES: JSON, service name -> "SERVING" | "NOT_SERVING" | "hang" ("" is the whole server). A
service not listed answers NOT_FOUND, as grpc's own health service does. SIGUSR1 swaps every
SERVING with NOT_SERVING and back (prints "flipped"). Prints "port N" once it listens on
127.0.0.1:N, then "check SERVICE" for each call.
"""

import asyncio
import json
import signal
import sys

import grpc

from grpc_test_server import serve

STATUS = {"UNKNOWN": 0, "SERVING": 1, "NOT_SERVING": 2, "SERVICE_UNKNOWN": 3}
statuses = json.loads(sys.argv[1])


def service_of(request):
    """HealthCheckRequest's `service` (field 1); the other fields are not the test's."""
    at, service = 0, ""
    while at < len(request):
        tag = request[at]
        at += 1
        length, shift = 0, 0
        while True:
            byte = request[at]
            at += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        if tag == 0x0A:
            service = request[at:at + length].decode()
        at += length
    return service


async def check(request, context):
    service = service_of(request)
    print("check", service, flush=True)
    status = statuses.get(service)
    if status is None:
        await context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
    if status == "hang":
        await asyncio.sleep(3600)
    return bytes([0x08, STATUS[status]])


def flip():
    for name, status in statuses.items():
        if status in ("SERVING", "NOT_SERVING"):
            statuses[name] = "NOT_SERVING" if status == "SERVING" else "SERVING"
    print("flipped", flush=True)


handler = grpc.method_handlers_generic_handler(
    "grpc.health.v1.Health", {"Check": grpc.unary_unary_rpc_method_handler(check)})
serve([handler], lambda loop: loop.add_signal_handler(signal.SIGUSR1, flip))
