#!/usr/bin/python3
"""A real gRPC server for the tests: the seed's linkd.v3.Library on Debian's grpcio (asyncio),
its handlers registered from a descriptor set, without generated code.

    /usr/bin/python3 grpc_library_server.py DESCRIPTOR_SET

Prints "port N" once it listens on 127.0.0.1:N, then one JSON line per thing a test waits for:
  {"event": "call", "method": ..., "request": {...}, "metadata": {...}, "timeout": seconds|null}
  {"event": "cancelled", "method": ..., "sent": n, "left": seconds|null}
                                                       the call was cancelled after n messages
                                                       (left: what was left of its deadline then:
                                                       about 0 when its own deadline ended it)
  {"event": "done", "method": ..., "sent": n}          the handler ended by itself
What a call does depends on its request (isbn for GetBook, query for SearchBooks):
  GetBook   "missing" NOT_FOUND, "unavailable" UNAVAILABLE, "exhausted" RESOURCE_EXHAUSTED,
            "denied" PERMISSION_DENIED, "late-missing" NOT_FOUND after 100 ms, "hang" never answers, "flaky-K" UNAVAILABLE for its
            first K calls, then a book; anything else: a book (stock 0, format EBOOK, a big sold).
  SearchBooks "ten" 10 books (the 6th after 200 ms), "three" 3 books then OK, "fail2" 2 books
            then INTERNAL, "hang" nothing until cancelled, anything else page_size books.
"""

import asyncio
import json
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory


def load_types(path):
    with open(path, "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    factory = message_factory.MessageFactory(pool)

    def cls(name):
        return factory.GetPrototype(pool.FindMessageTypeByName(name))

    return cls("linkd.v3.Book"), cls("linkd.v3.GetBookRequest"), cls("linkd.v3.SearchBooksRequest")


def emit(**event):
    print(json.dumps(event), flush=True)


def main():
    Book, GetBookRequest, SearchBooksRequest = load_types(sys.argv[1])
    flaky_calls = {}

    def book(isbn, n=0):
        return Book(isbn=isbn, title="Book " + str(n), author="Author " + str(n), stock=n,
                    format="EBOOK", sold=12345678901234 + n, tags=[])

    def seen(method, request, context):
        remaining = context.time_remaining()
        emit(event="call", method=method,
             request=json_format.MessageToDict(request, preserving_proto_field_name=True),
             metadata={k: v for k, v in context.invocation_metadata()},
             timeout=remaining)

    async def get_book(request, context):
        seen("GetBook", request, context)
        isbn = request.isbn
        codes = {"missing": (grpc.StatusCode.NOT_FOUND, "no such book: é 100%"),
                 "unavailable": (grpc.StatusCode.UNAVAILABLE, "try later"),
                 "exhausted": (grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down"),
                 "denied": (grpc.StatusCode.PERMISSION_DENIED, "no")}
        if isbn == "late-missing":
            await asyncio.sleep(0.1)
            await context.abort(grpc.StatusCode.NOT_FOUND, "no such book")
        if isbn in codes:
            await context.abort(*codes[isbn])
        if isbn.startswith("flaky-"):
            left = int(isbn[len("flaky-"):])
            flaky_calls[isbn] = flaky_calls.get(isbn, 0) + 1
            if flaky_calls[isbn] <= left:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "flaky")
        if isbn == "hang":
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                emit(event="cancelled", method="GetBook", sent=0, left=context.time_remaining())
                raise
        return book(isbn)

    async def search_books(request, context):
        seen("SearchBooks", request, context)
        query = request.query
        count = {"ten": 10, "three": 3, "fail2": 2, "hang": 0}.get(query, request.page_size)
        sent = 0
        try:
            for n in range(count):
                if query == "ten" and n == 5:
                    await asyncio.sleep(0.2)
                yield book(query + "-" + str(n), n)
                sent += 1
            if query == "fail2":
                await context.abort(grpc.StatusCode.INTERNAL, "broke after 2")
            if query == "hang":
                await asyncio.sleep(3600)
        except asyncio.CancelledError:
            emit(event="cancelled", method="SearchBooks", sent=sent, left=context.time_remaining())
            raise
        emit(event="done", method="SearchBooks", sent=sent)

    handlers = {
        "GetBook": grpc.unary_unary_rpc_method_handler(
            get_book, request_deserializer=GetBookRequest.FromString,
            response_serializer=Book.SerializeToString),
        "SearchBooks": grpc.unary_stream_rpc_method_handler(
            search_books, request_deserializer=SearchBooksRequest.FromString,
            response_serializer=Book.SerializeToString),
    }

    async def serve():
        server = grpc.aio.server()
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("linkd.v3.Library", handlers),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print("port", port, flush=True)
        await server.wait_for_termination()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
