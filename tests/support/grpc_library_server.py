#!/usr/bin/python3
"""A real gRPC server for the tests: the seed's linkd.v3.Library on Debian's grpcio (asyncio),
its handlers registered from a descriptor set, without generated code.

    /usr/bin/python3 grpc_library_server.py DESCRIPTOR_SET [REFLECTION...] [evolved]

REFLECTION: "v1" and/or "v1alpha": it also serves gRPC server reflection in those versions
(grpc.reflection.<v>.ServerReflection/ServerReflectionInfo, file_containing_symbol and
file_by_filename, the files of the set; Debian has no grpcio-reflection, so it is written here
on the same descriptor machinery). GetBookAgain (a GetBook by another name) is served all along,
but reflection names it only after SIGUSR1 ("a method added after start"), which prints
{"event": "added"}. Each reflection request prints {"event": "reflection", "api": v, "asked": s}.
REFLECTION "lean": library.proto also imports linkd/v3/extra.proto (an empty file), and an answer
holds only the file asked for, not its imports: the client must ask for extra.proto by name.
"evolved": the server runs a later library.proto than the set's, GetBookRequest with
`string edition = 2` and Book with `string subtitle = 9` (set to "second edition" in every book):
what a gateway still on the set's descriptors neither sends nor shows.

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
            first K calls, then a book; "held" a book once SIGUSR2 came (after its call line);
            anything else: a book (stock 0, format EBOOK, a big sold).
  SearchBooks "ten" 10 books (the 6th after 200 ms), "three" 3 books then OK, "fail2" 2 books
            then INTERNAL, "hang" nothing until cancelled, anything else page_size books.
"""

import asyncio
import signal
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from grpc_test_server import emit, serve


def evolve(files):
    """The fields a later library.proto added (see "evolved" above)."""
    T = descriptor_pb2.FieldDescriptorProto
    library = next(f for f in files.file if f.name == "linkd/v3/library.proto")
    messages = {m.name: m for m in library.message_type}
    messages["GetBookRequest"].field.add(name="edition", json_name="edition", number=2,
                                         type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    messages["Book"].field.add(name="subtitle", json_name="subtitle", number=9, type=T.TYPE_STRING,
                               label=T.LABEL_OPTIONAL)


def load_types(path, evolved=False):
    with open(path, "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    if evolved:
        evolve(files)
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    factory = message_factory.MessageFactory(pool)

    def cls(name):
        return factory.GetPrototype(pool.FindMessageTypeByName(name))

    return (files, cls("linkd.v3.Book"), cls("linkd.v3.GetBookRequest"),
            cls("linkd.v3.SearchBooksRequest"))


def reflection_types(package):
    """ServerReflectionRequest and ServerReflectionResponse of grpc/reflection/<v>/reflection.proto
    (the fields used: the same numbers in v1 and v1alpha), built without generated code."""
    T = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name=package.replace(".", "/") + "/reflection.proto",
                                           package=package, syntax="proto3")
    req = f.message_type.add(name="ServerReflectionRequest")
    req.oneof_decl.add(name="message_request")
    req.field.add(name="host", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    for name, number in (("file_by_filename", 3), ("file_containing_symbol", 4), ("list_services", 7)):
        req.field.add(name=name, number=number, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL, oneof_index=0)
    fdr = f.message_type.add(name="FileDescriptorResponse")
    fdr.field.add(name="file_descriptor_proto", number=1, type=T.TYPE_BYTES, label=T.LABEL_REPEATED)
    err = f.message_type.add(name="ErrorResponse")
    err.field.add(name="error_code", number=1, type=T.TYPE_INT32, label=T.LABEL_OPTIONAL)
    err.field.add(name="error_message", number=2, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    resp = f.message_type.add(name="ServerReflectionResponse")
    resp.oneof_decl.add(name="message_response")
    resp.field.add(name="valid_host", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    resp.field.add(name="original_request", number=2, type=T.TYPE_MESSAGE, label=T.LABEL_OPTIONAL,
                   type_name="." + package + ".ServerReflectionRequest")
    resp.field.add(name="file_descriptor_response", number=4, type=T.TYPE_MESSAGE,
                   label=T.LABEL_OPTIONAL, type_name="." + package + ".FileDescriptorResponse", oneof_index=0)
    resp.field.add(name="error_response", number=7, type=T.TYPE_MESSAGE, label=T.LABEL_OPTIONAL,
                   type_name="." + package + ".ErrorResponse", oneof_index=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    factory = message_factory.MessageFactory(pool)
    return (factory.GetPrototype(pool.FindMessageTypeByName(package + ".ServerReflectionRequest")),
            factory.GetPrototype(pool.FindMessageTypeByName(package + ".ServerReflectionResponse")))


class reflected_files:
    """The files reflection answers with: the set's, with GetBookAgain once added."""

    def __init__(self, files, lean):
        self.files = {f.name: f for f in files.file}
        self.lean = lean
        if lean:
            extra = descriptor_pb2.FileDescriptorProto(name="linkd/v3/extra.proto", package="linkd.v3",
                                                       syntax="proto3")
            self.files[extra.name] = extra
            self.files["linkd/v3/library.proto"].dependency.append(extra.name)
        self.build()

    def add_method(self):
        library = descriptor_pb2.FileDescriptorProto()
        library.CopyFrom(self.files["linkd/v3/library.proto"])
        service = next(s for s in library.service if s.name == "Library")
        service.method.add(name="GetBookAgain", input_type=".linkd.v3.GetBookRequest",
                           output_type=".linkd.v3.Book")
        self.files[library.name] = library
        self.build()

    def build(self):
        self.pool = descriptor_pool.DescriptorPool()
        for name in self.order():
            self.pool.Add(self.files[name])

    def order(self):
        done = []

        def visit(name):
            if name in done or name not in self.files:
                return
            for dependency in self.files[name].dependency:
                visit(dependency)
            done.append(name)

        for name in self.files:
            visit(name)
        return done

    def with_dependencies(self, name):
        if self.lean:
            return [self.files[name].SerializeToString()]
        out, todo = [], [name]
        while todo:
            n = todo.pop()
            if n in out or n not in self.files:
                continue
            out.append(n)
            todo.extend(self.files[n].dependency)
        return [self.files[n].SerializeToString() for n in out]

    def answer(self, request, Response):
        which = request.WhichOneof("message_request")
        response = Response(original_request=request)
        try:
            if which == "file_containing_symbol":
                name = self.pool.FindFileContainingSymbol(request.file_containing_symbol).name
            elif which == "file_by_filename":
                name = self.pool.FindFileByName(request.file_by_filename).name
            else:
                raise KeyError(which)
            response.file_descriptor_response.file_descriptor_proto.extend(self.with_dependencies(name))
        except KeyError:
            response.error_response.error_code = grpc.StatusCode.NOT_FOUND.value[0]
            response.error_response.error_message = "not found"
        return response


def main():
    evolved = "evolved" in sys.argv[2:]
    files, Book, GetBookRequest, SearchBooksRequest = load_types(sys.argv[1], evolved)
    apis = [api for api in sys.argv[2:] if api not in ("lean", "evolved")]
    reflected = reflected_files(files, "lean" in sys.argv[2:])
    flaky_calls = {}
    released = asyncio.Event()  # SIGUSR2: "held" calls answer

    def book(isbn, n=0):
        more = {"subtitle": "second edition"} if evolved else {}
        return Book(isbn=isbn, title="Book " + str(n), author="Author " + str(n), stock=n,
                    format="EBOOK", sold=12345678901234 + n, tags=[], **more)

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
        if isbn == "held":
            await released.wait()
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
                sent += 1 # counted as handed over: a cancel may find the generator at its yield
                yield book(query + "-" + str(n), n)
            if query == "fail2":
                await context.abort(grpc.StatusCode.INTERNAL, "broke after 2")
            if query == "hang":
                await asyncio.sleep(3600)
        except (asyncio.CancelledError, GeneratorExit):
            # CancelledError when the cancel finds the handler awaiting (the 6th message's
            # delay); GeneratorExit when it finds it at a yield, its message still being written.
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

    handlers["GetBookAgain"] = handlers["GetBook"]

    def reflection_handler(api):
        Request, Response = reflection_types("grpc.reflection." + api)

        async def info(requests, context):
            async for request in requests:
                emit(event="reflection", api=api, asked=request.file_containing_symbol or request.file_by_filename)
                yield reflected.answer(request, Response)

        return grpc.method_handlers_generic_handler(
            "grpc.reflection." + api + ".ServerReflection",
            {"ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
                info, request_deserializer=Request.FromString,
                response_serializer=Response.SerializeToString)})

    def added():
        reflected.add_method()
        emit(event="added")

    def on_loop(loop):
        loop.add_signal_handler(signal.SIGUSR1, added)
        loop.add_signal_handler(signal.SIGUSR2, released.set)

    serve((grpc.method_handlers_generic_handler("linkd.v3.Library", handlers),) +
          tuple(reflection_handler(api) for api in apis), on_loop)

if __name__ == "__main__":
    main()
