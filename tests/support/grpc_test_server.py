"""What the tests' grpcio servers share (grpc_library_server.py, grpc_cart_server.py): their event
lines and their start on a loopback port."""

import asyncio
import json

import grpc


def emit(**event):
    """One JSON line on stdout: what a test waits for (grpc_library.hpp reads them)."""
    print(json.dumps(event), flush=True)


def serve(generic_handlers, on_loop=lambda loop: None):
    """Serves `generic_handlers` on 127.0.0.1 (a port of the system's choice, printed as "port N"
    once it listens) until killed; `on_loop` gets the event loop first (signal handlers)."""

    async def run():
        server = grpc.aio.server()
        server.add_generic_rpc_handlers(tuple(generic_handlers))
        on_loop(asyncio.get_running_loop())
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print("port", port, flush=True)
        await server.wait_for_termination()

    asyncio.run(run())
