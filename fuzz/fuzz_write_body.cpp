// Fuzzes a write route's body on its way to a gRPC message (docs/api.md#write-routes): the bytes
// through the body parser admission runs (include/gather/admission/write_body.hpp), then, when it
// takes them, into two message templates of a cart request (`{"cart_id": "c", "sku":
// "{body.sku}", "quantity": "{body.quantity}", "gift": "{body.gift}", "note": "n: {body.note}"}`
// and the whole body, "{body}"), rendered as the coordinator renders them and encoded as the
// write would be (grpc_json.hpp), the field-naming check beside (proto_catalog.hpp).
// Invariants: the parser gives an object or a reason, never both nor neither; a rendered message is
// an object; an encoded one decodes to an object; when protobuf refuses a message, the check
// names a field of it (what the client's 400 says); when protobuf takes it, the check finds
// nothing.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/type_resolver.h>
#include <google/protobuf/util/type_resolver_util.h>
#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "gather/admission/write_body.hpp"
#include "gather/config/url_template.hpp"
#include "gather/downstream/grpc/grpc_json.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"

namespace {

namespace pb = google::protobuf;

constexpr const char* cart_proto = R"(
syntax = "proto3";
package fuzz;
message Gift { string note = 1; int64 value = 2; }
message AddItemRequest {
  string cart_id = 1; string sku = 2; int32 quantity = 3; Gift gift = 4; string note = 5;
  repeated uint32 codes = 6; bool urgent = 7; double price = 8; map<string, int32> extra = 9;
}
)";

struct cart_types {
  pb::DescriptorPool pool;
  std::unique_ptr<pb::util::TypeResolver> resolver;
  std::unique_ptr<pb::DynamicMessageFactory> factory;
  const pb::Descriptor* request = nullptr;

  cart_types() {
    pb::io::ArrayInputStream input(cart_proto, static_cast<int>(std::string(cart_proto).size()));
    pb::io::Tokenizer tokenizer(&input, nullptr);
    pb::compiler::Parser parser;
    pb::FileDescriptorProto proto;
    proto.set_name("fuzz/cart.proto");
    FUZZ_CHECK(parser.Parse(&tokenizer, &proto));
    FUZZ_CHECK(pool.BuildFile(proto));
    resolver.reset(pb::util::NewTypeResolverForDescriptorPool("type.googleapis.com", &pool));
    factory = std::make_unique<pb::DynamicMessageFactory>(&pool);
    request = pool.FindMessageTypeByName("fuzz.AddItemRequest");
    FUZZ_CHECK(request);
  }
};

gather::message_placeholder body_placeholder(const std::string& pointer, gather::field_path field,
                                             std::string prefix = {}) {
  gather::message_placeholder out;
  out.pointer = pointer;
  if (!prefix.empty())
    out.text.parts.push_back({gather::url_part::kind::literal, prefix, {}, 0});
  out.text.parts.push_back({gather::url_part::kind::body, "body", std::move(field), 0});
  out.whole = prefix.empty();
  return out;
}

/// Renders `tpl` from `body` as the coordinator does (a body field with its JSON type, absent
/// ones left out), encodes it, and checks the invariants.
void render_and_encode(const cart_types& types, const nlohmann::json& tpl,
                       const std::vector<gather::message_placeholder>& placeholders,
                       const std::vector<bool>& as_text, const nlohmann::json& body) {
  const auto message = gather::render_json_template(tpl, placeholders, as_text, [&](const gather::url_part& part) {
    const auto* value = gather::find_field(body, part.field);
    return value ? std::optional<nlohmann::json>(*value)
                 : std::optional<nlohmann::json>(nlohmann::json(nlohmann::json::value_t::discarded));
  });
  if (!message) // a value that cannot stand as text in "n: {body.note}"
    return;
  FUZZ_CHECK(message->is_object());
  const gather::grpc::message_types codec{*types.resolver, *types.factory};
  const auto bytes = gather::grpc::encode_message(codec, *types.request, *message);
  const auto problems = gather::message_problems(*message, *types.request, "message");
  if (!bytes.ok) {
    FUZZ_CHECK(!bytes.error.empty());
    FUZZ_CHECK(!problems.empty());
    FUZZ_CHECK(problems.front().rfind("message", 0) == 0);
    return;
  }
  FUZZ_CHECK(problems.empty());
  const auto decoded = gather::grpc::decode_message(codec, *types.request, bytes.text);
  FUZZ_CHECK(decoded.ok);
  FUZZ_CHECK(nlohmann::json::parse(decoded.text, nullptr, false).is_object());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static cart_types types;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto body = gather::parse_write_body(text);
  FUZZ_CHECK(body.value.operator bool() != !body.problem.empty());
  if (!body.value)
    return 0;
  FUZZ_CHECK(body.value->is_object());
  static const nlohmann::json fields_tpl = {{"cart_id", "c"}, {"sku", "{body.sku}"}, {"quantity", "{body.quantity}"},
                                            {"gift", "{body.gift}"}, {"note", "n: {body.note}"}};
  static const std::vector<gather::message_placeholder> fields_placeholders = {
    body_placeholder("/gift", {"gift"}), body_placeholder("/note", {"note"}, "n: "),
    body_placeholder("/quantity", {"quantity"}), body_placeholder("/sku", {"sku"})};
  render_and_encode(types, fields_tpl, fields_placeholders, {false, true, false, true}, *body.value);
  static const std::vector<gather::message_placeholder> whole = {body_placeholder("", {})};
  render_and_encode(types, "{body}", whole, {false}, *body.value);
  return 0;
}
