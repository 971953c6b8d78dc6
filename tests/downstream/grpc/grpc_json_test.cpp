// A gRPC answer's message as JSON (docs/grpc.md): the gateway's reflection writer
// (grpc_message_json.hpp) against protobuf's own printer with the same choices, on thousands of
// messages filled at random with every kind of field (tests/downstream/protos/gather/test/
// kinds.proto: scalars at their edges, NaN and infinities, unknown enum numbers, maps, oneofs,
// proto3 optional, nested and well-known types). Both must give the same JSON value, or the
// writer must leave the message to the printer.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include "gather/config/config.hpp"
#include "gather/downstream/grpc/grpc_json.hpp"
#include "gather/downstream/grpc/grpc_message_json.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"
#include "downstream/grpc/kinds_messages.hpp"

namespace pb = google::protobuf;
using json = nlohmann::json;

using kinds_test::filler;
using kinds_test::kinds_catalog;

TEST_CASE("gRPC answers: the reflection writer gives protobuf's printer's JSON for every kind of field",
          "[unit][grpc]") {
  const auto catalog = kinds_catalog();
  const gather::grpc::message_types types{*catalog->resolver, *catalog->factory};
  const auto* every = catalog->pool->FindMessageTypeByName("gather.test.Every");
  REQUIRE(every);
  const auto* prototype = catalog->factory->GetPrototype(every);
  int written = 0, left_to_printer = 0;
  for (unsigned seed = 1; seed <= 2000; ++seed) {
    std::unique_ptr<pb::Message> message(prototype->New());
    filler(seed).fill(*message, 0);
    const std::string bytes = message->SerializeAsString();
    const auto printed = gather::grpc::decode_message_printed(types, *every, bytes);
    const auto ours = gather::grpc::decode_message_value(types, *every, bytes);
    INFO("seed " << seed << ": " << message->ShortDebugString());
    REQUIRE(ours.ok == printed.ok);
    if (!printed.ok)
      continue;
    const auto reference = json::parse(printed.text);
    INFO("differences: " << json::diff(ours.value, reference).dump());
    CHECK(ours.value == reference);
    const auto text = gather::grpc::json_text(ours.value);
    CHECK(text == ours.value.dump()); // the section's data, as text
    // ... and as the answer writes it, from the message without the value: the same bytes.
    std::string written_text = "[", error;
    REQUIRE(gather::grpc::decode_message_text(types, *every, bytes, written_text, error));
    CHECK(written_text == "[" + text);
    (gather::grpc::message_json(*message) ? written : left_to_printer)++;
  }
  INFO("written " << written << ", left to the printer " << left_to_printer);
  CHECK(written > 900); // the writer does the work; the printer only what it leaves
}

TEST_CASE("gRPC answers: the default message prints every field with its default", "[unit][grpc]") {
  const auto catalog = kinds_catalog();
  const gather::grpc::message_types types{*catalog->resolver, *catalog->factory};
  const auto* every = catalog->pool->FindMessageTypeByName("gather.test.Every");
  REQUIRE(every);
  const auto ours = gather::grpc::decode_message_value(types, *every, "");
  REQUIRE(ours.ok);
  CHECK(ours.value["d"] == 0);
  CHECK(ours.value["i64"] == "0");
  CHECK(ours.value["color"] == "COLOR_UNSPECIFIED");
  CHECK(ours.value["rs"] == json::array());
  CHECK(ours.value["m_si"] == json::object());
  CHECK(ours.value.count("inner") == 0); // an unset message, a oneof, a proto3 optional: left out
  CHECK(ours.value.count("c_s") == 0);
  CHECK(ours.value.count("opt_i") == 0);
  CHECK(ours.value == json::parse(gather::grpc::decode_message_printed(types, *every, "").text));
}

TEST_CASE("gRPC answers: json_text writes what nlohmann's dump writes, byte for byte", "[unit][grpc]") {
  const std::string bad_utf8 = "ok \xC3\x28 not";
  const std::vector<json> values = {
      json::object(), json::array(), nullptr, true, false, 0, -1, std::int64_t{-9223372036854775807LL - 1},
      std::uint64_t{18446744073709551615ULL}, 1.0, -0.0, 0.1, 1e300, 5e-324, 1.5e20,
      std::numeric_limits<double>::quiet_NaN(), "", "plain text, eight+ bytes long",
      "a \"quote\" and a \\ backslash", "tab\tnew\nline\rcr\bbs\fff", std::string("nul\0in", 6), "\x01\x1f\x7f",
      "caf\xC3\xA9 \xE6\x9B\xB8 \xF0\x9F\x93\x9A", "/slash/", "12345678\"",
      json::parse(R"({"b":[1,2.5,"x",{"k\u00e9y":null}],"a":{"":{}},"c\"q":[[],[[]]]})"),
      json::array({json::object({{"isbn", "978-7"}, {"pages", 320}, {"price", 19.99}}), json::array({-3, "y"})})};
  for (const auto& value : values) {
    INFO(value.dump(-1, ' ', true, json::error_handler_t::replace));
    CHECK(gather::grpc::json_text(value) == value.dump());
  }
  // Ill-formed UTF-8: nlohmann's error, as dump() gives it.
  CHECK_THROWS_AS(gather::grpc::json_text(json(bad_utf8)), json::type_error);
  CHECK_THROWS_AS(gather::grpc::json_text(json::object({{bad_utf8, 1}})), json::type_error);
}

namespace {

/// A message of edge values: every string to escape, integer limits, floats at their edges, map
/// keys whose sorted order is not their numeric one, a repeated key.
std::unique_ptr<pb::Message> edge_message(const gather::proto_catalog& catalog) {
  const auto* every = catalog.pool->FindMessageTypeByName("gather.test.Every");
  std::unique_ptr<pb::Message> m(catalog.factory->GetPrototype(every)->New());
  const auto* r = m->GetReflection();
  const auto f = [&](const char* name) { return every->FindFieldByName(name); };
  static const char odd[] = "nul\0 \"q\" \\ \t\n\x01\x1f\x7f caf\xC3\xA9 \xF0\x9F\x93\x9A \xe2\x80\xa8";
  r->SetString(m.get(), f("s"), std::string(odd, sizeof odd - 1));
  r->SetInt64(m.get(), f("i64"), INT64_MIN);
  r->SetUInt64(m.get(), f("u64"), UINT64_MAX);
  r->SetInt32(m.get(), f("i32"), INT32_MIN);
  r->SetUInt32(m.get(), f("u32"), UINT32_MAX);
  r->SetDouble(m.get(), f("d"), -0.0);
  r->SetFloat(m.get(), f("f"), 1e-45f);
  for (const double d : {5e-324, 1e300, 0.1, 1.0, std::numeric_limits<double>::quiet_NaN(),
                         -std::numeric_limits<double>::infinity()})
    r->AddDouble(m.get(), f("rd"), d);
  for (const float x : {16777217.0f, 3.4028235e38f, -0.0f, std::numeric_limits<float>::infinity()})
    r->AddFloat(m.get(), f("rf"), x);
  r->AddString(m.get(), f("rs"), "");
  r->AddString(m.get(), f("rs"), "</script>\u00e9");
  r->SetString(m.get(), f("by"), std::string("\0\xff\x10", 3));
  r->SetEnumValue(m.get(), f("color"), 99); // a number the enum does not name
  const auto entry = [&](const char* map, auto set) {
    auto* e = r->AddMessage(m.get(), f(map));
    set(*e, *e->GetReflection(), *e->GetDescriptor()->map_key(), *e->GetDescriptor()->map_value());
  };
  const std::vector<std::pair<int, std::string>> numbered = {{10, "a"}, {9, "first"}, {-1, "c"}, {100, "d"}, {9, "last"}};
  for (const auto& kv : numbered) // "-1" < "10" < "100" < "9"; 9 twice: the last wins
    entry("m_is", [&](pb::Message& e, const pb::Reflection& er, const pb::FieldDescriptor& k, const pb::FieldDescriptor& v) {
      er.SetInt32(&e, &k, kv.first);
      er.SetString(&e, &v, kv.second);
    });
  for (const char* key : {"b", "B", "a\"q", "\xC3\xA9", ""})
    entry("m_si", [&](pb::Message& e, const pb::Reflection& er, const pb::FieldDescriptor& k, const pb::FieldDescriptor& v) {
      er.SetString(&e, &k, key);
      er.SetInt32(&e, &v, static_cast<int>(std::string(key).size()));
    });
  for (const bool key : {true, false})
    entry("m_bi", [&](pb::Message& e, const pb::Reflection& er, const pb::FieldDescriptor& k, const pb::FieldDescriptor&) {
      er.SetBool(&e, &k, key); // no value: the Inner's defaults
    });
  auto* st = r->MutableMessage(m.get(), f("st"));
  const auto* fields = st->GetDescriptor()->FindFieldByName("fields");
  for (const char* key : {"z", "a", "m"}) {
    auto* e = st->GetReflection()->AddMessage(st, fields);
    e->GetReflection()->SetString(e, e->GetDescriptor()->map_key(), key);
    auto* value = e->GetReflection()->MutableMessage(e, e->GetDescriptor()->map_value());
    value->GetReflection()->SetBool(value, value->GetDescriptor()->FindFieldByName("bool_value"), true);
  }
  return m;
}

} // namespace

TEST_CASE("gRPC answers: the text written from a message is json_text of its value, on edge values",
          "[unit][grpc]") {
  const auto catalog = kinds_catalog();
  const gather::grpc::message_types types{*catalog->resolver, *catalog->factory, catalog->orders.get()};
  const auto* every = catalog->pool->FindMessageTypeByName("gather.test.Every");
  const auto message = edge_message(*catalog);
  const auto value = gather::grpc::message_json(*message, catalog->orders.get());
  REQUIRE(value);
  CHECK((*value)["m_is"]["9"] == "last"); // the later entry of a key
  const std::string expected = gather::grpc::json_text(*value);
  std::string text = "prefix:";
  REQUIRE(gather::grpc::message_text(*message, text, catalog->orders.get()));
  CHECK(text == "prefix:" + expected);
  std::string own; // without a catalog's orders: made for the call
  REQUIRE(gather::grpc::message_text(*message, own));
  CHECK(own == expected);

  // Through the bytes, as an answer comes, and against protobuf's printer (one entry per key:
  // the printer takes a repeated key's first entry, the parser and the writer its last).
  const auto bytes = message->SerializeAsString();
  std::string decoded, error;
  REQUIRE(gather::grpc::decode_message_text(types, *every, bytes, decoded, error));
  CHECK(decoded == expected);
  auto* r = message->GetReflection();
  const auto* m_is = every->FindFieldByName("m_is");
  r->SwapElements(message.get(), m_is, 1, r->FieldSize(*message, m_is) - 1);
  r->RemoveLast(message.get(), m_is);
  const auto unique = message->SerializeAsString();
  const auto printed = gather::grpc::decode_message_printed(types, *every, unique);
  REQUIRE(printed.ok);
  decoded.clear();
  REQUIRE(gather::grpc::decode_message_text(types, *every, unique, decoded, error));
  CHECK(json::parse(decoded) == json::parse(printed.text));

  // What the walk leaves to protobuf's printer (an Any) comes out as the printer's, as text.
  auto* any = r->MutableMessage(message.get(), every->FindFieldByName("any"));
  any->GetReflection()->SetString(any, any->GetDescriptor()->FindFieldByName("type_url"),
                                  "type.googleapis.com/gather.test.Inner");
  std::string left = "x";
  CHECK_FALSE(gather::grpc::message_text(*message, left, catalog->orders.get()));
  CHECK(left == "x"); // as it was
  const auto with_any = message->SerializeAsString();
  decoded.clear();
  REQUIRE(gather::grpc::decode_message_text(types, *every, with_any, decoded, error));
  const auto via_value = gather::grpc::decode_message_value(types, *every, with_any);
  REQUIRE(via_value.ok);
  CHECK(decoded == gather::grpc::json_text(via_value.value));

  // Bytes that are not such a message: the decode's error, nothing written.
  decoded = "kept";
  CHECK_FALSE(gather::grpc::decode_message_text(types, *every, std::string("\xff\xff\xff\xff", 4), decoded, error));
  CHECK(decoded == "kept");
  CHECK(error == "not a gather.test.Every message");
}
