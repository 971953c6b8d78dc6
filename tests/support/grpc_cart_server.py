#!/usr/bin/python3
"""A real gRPC cart service for the write-route tests: shop.v1.Cart on Debian's grpcio (asyncio),
its handlers registered from a descriptor set, without generated code.

    /usr/bin/python3 grpc_cart_server.py DESCRIPTOR_SET

Prints "port N" once it listens on 127.0.0.1:N, then one JSON line per call:
  {"event": "call", "method": ..., "request": {...}, "metadata": {...}, "timeout": seconds|null}
  {"event": "done", "method": ..., "cart": {...}}      AddItem added its line (it completed)
What AddItem does depends on its sku:
  "code-N"   aborts with status code N and grpc-message "refused with N" (every code of the table)
  "slow-MS"  waits MS milliseconds, then adds the line (a write still in flight)
  anything else: adds `quantity` of it to the cart and answers the cart.
GetCart answers the cart as it stands.
"""

import asyncio
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from grpc_test_server import emit, serve


def main():
    with open(sys.argv[1], "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    factory = message_factory.MessageFactory(pool)

    def cls(name):
        return factory.GetPrototype(pool.FindMessageTypeByName("shop.v1." + name))

    AddItemRequest, GetCartRequest, CartView = cls("AddItemRequest"), cls("GetCartRequest"), cls("CartView")
    carts = {}

    def view(cart_id):
        lines = carts.get(cart_id, {})
        return CartView(cart_id=cart_id, lines=[{"sku": s, "quantity": q} for s, q in lines.items()],
                        count=sum(lines.values()))

    def seen(method, request, context):
        emit(event="call", method=method,
             request=json_format.MessageToDict(request, preserving_proto_field_name=True),
             metadata={k: v for k, v in context.invocation_metadata()},
             timeout=context.time_remaining())

    async def add_item(request, context):
        seen("AddItem", request, context)
        sku = request.sku
        if sku.startswith("code-"):
            code = int(sku[len("code-"):])
            status = next(s for s in grpc.StatusCode if s.value[0] == code)
            await context.abort(status, "refused with " + str(code))
        if sku.startswith("slow-"):
            await asyncio.sleep(int(sku[len("slow-"):]) / 1000)
        lines = carts.setdefault(request.cart_id, {})
        lines[sku] = lines.get(sku, 0) + request.quantity
        answer = view(request.cart_id)
        emit(event="done", method="AddItem",
             cart=json_format.MessageToDict(answer, preserving_proto_field_name=True))
        return answer

    async def get_cart(request, context):
        seen("GetCart", request, context)
        return view(request.cart_id)

    handlers = {
        "AddItem": grpc.unary_unary_rpc_method_handler(
            add_item, request_deserializer=AddItemRequest.FromString,
            response_serializer=CartView.SerializeToString),
        "GetCart": grpc.unary_unary_rpc_method_handler(
            get_cart, request_deserializer=GetCartRequest.FromString,
            response_serializer=CartView.SerializeToString),
    }

    serve((grpc.method_handlers_generic_handler("shop.v1.Cart", handlers),))

if __name__ == "__main__":
    main()
