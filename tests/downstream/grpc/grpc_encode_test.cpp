// A gRPC request's message from its rendered JSON (docs/grpc.md): the gateway's reflection encoder
// (encode_message_direct) against protobuf's JSON parser (JsonToBinaryString, what encode_message
// did before it), on thousands of random messages written to JSON three ways (the gateway's
// writer: .proto names, int64 as strings; protobuf's printer: JSON names; and with enums as
// numbers) and on hand-written bad inputs. Where the encoder takes a message, protobuf must take
// it too and both bytes must parse to equal messages; where it does not, encode_message's answer
// is protobuf's own. A refusal is never the encoder's: it leaves every doubt to protobuf.
#include <catch2/catch.hpp>

#include <google/protobuf/util/field_comparator.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include "gather/downstream/grpc/grpc_json.hpp"
#include "gather/downstream/grpc/grpc_message_json.hpp"
#include "downstream/grpc/kinds_messages.hpp"

namespace pb = google::protobuf;
using json = nlohmann::json;

namespace {

struct encode_check {
  const gather::grpc::message_types& types;
  const pb::Descriptor& type;
  int direct = 0, left = 0;

  std::unique_ptr<pb::Message> parsed(const std::string& bytes) const {
    std::unique_ptr<pb::Message> m(types.factory.GetPrototype(&type)->New());
    REQUIRE(m->ParseFromString(bytes));
    return m;
  }

  /// The encoder and protobuf agree on `message`: both refuse, or both take it and their bytes
  /// parse to equal messages (NaN equal to NaN); encode_message answers as protobuf where the
  /// encoder leaves it.
  void operator()(const json& message) {
    INFO("message " << message.dump(-1, ' ', false, json::error_handler_t::replace));
    const auto reference = gather::grpc::encode_message_protobuf(types, type, message);
    std::string bytes;
    const bool taken = gather::grpc::encode_message_direct(types, type, message, bytes);
    const auto answered = gather::grpc::encode_message(types, type, message);
    INFO("protobuf: " << (reference.ok ? "takes it" : reference.error));
    if (!taken) {
      ++left;
      CHECK(answered.ok == reference.ok);
      CHECK(answered.text == reference.text);
      CHECK(answered.error == reference.error);
      return;
    }
    ++direct;
    REQUIRE(reference.ok);
    CHECK(answered.ok);
    CHECK(answered.text == bytes);
    const auto ours = parsed(bytes), theirs = parsed(reference.text);
    pb::util::DefaultFieldComparator comparator;
    comparator.set_treat_nan_as_equal(true);
    pb::util::MessageDifferencer differ;
    differ.set_field_comparator(&comparator);
    std::string report;
    differ.ReportDifferencesToString(&report);
    INFO("ours " << ours->ShortDebugString() << "\ntheirs " << theirs->ShortDebugString());
    CHECK(differ.Compare(*ours, *theirs));
    INFO(report);
  }
};

/// The message without the well-known types' fields (which the encoder leaves to protobuf), so
/// most of the random messages are the encoder's.
void drop_well_known(pb::Message& m) {
  const auto* type = m.GetDescriptor();
  const auto well_known = [](const pb::Descriptor* t) {
    return t && t->file()->name().rfind("google/protobuf/", 0) == 0;
  };
  for (int i = 0; i < type->field_count(); ++i) {
    const auto* field = type->field(i);
    const auto* kind = field->message_type();
    if (well_known(kind) || (field->is_map() && well_known(kind->map_value()->message_type())))
      m.GetReflection()->ClearField(&m, field);
  }
}

std::string printed(const pb::Message& m, bool enums_as_ints) {
  pb::util::JsonPrintOptions options;
  options.always_print_enums_as_ints = enums_as_ints;
  std::string out;
  REQUIRE(pb::util::MessageToJsonString(m, &out, options).ok());
  return out;
}

} // namespace

TEST_CASE("gRPC requests: the reflection encoder and protobuf's JSON parser agree on random messages",
          "[unit][grpc]") {
  const auto catalog = kinds_test::kinds_catalog();
  const gather::grpc::message_types types{*catalog->resolver, *catalog->factory, catalog->orders.get()};
  const auto* every = catalog->pool->FindMessageTypeByName("gather.test.Every");
  REQUIRE(every);
  encode_check check{types, *every};
  for (unsigned seed = 1; seed <= 2000; ++seed) {
    std::unique_ptr<pb::Message> message(catalog->factory->GetPrototype(every)->New());
    kinds_test::filler(seed).fill(*message, 0);
    if (seed % 4 != 0) // one in four keeps its well-known types: the encoder leaves those
      drop_well_known(*message);
    INFO("seed " << seed << ": " << message->ShortDebugString());
    if (const auto value = gather::grpc::message_json(*message))
      check(*value);
    check(json::parse(printed(*message, false)));
    check(json::parse(printed(*message, true)));
  }
  INFO("taken by the encoder " << check.direct << ", left to protobuf " << check.left);
  CHECK(check.direct > 3000); // the encoder does the work; protobuf only what it leaves
}

TEST_CASE("gRPC requests: what the encoder takes and what it leaves, by hand", "[unit][grpc]") {
  const auto catalog = kinds_test::kinds_catalog();
  const gather::grpc::message_types types{*catalog->resolver, *catalog->factory, catalog->orders.get()};
  const auto* every = catalog->pool->FindMessageTypeByName("gather.test.Every");
  encode_check check{types, *every};
  const std::vector<json> taken = {
      json::object(),
      {{"i32", 5}, {"i64", "-9223372036854775808"}, {"u64", "18446744073709551615"}, {"u32", 4294967295u}},
      {{"i64", 9007199254740993LL}, {"sf64", -1}, {"fx64", 0}, {"s32", -2147483648LL}},
      {{"i32", "-17"}, {"s64", "0"}, {"u32", "4294967295"}},
      {{"d", 0.1}, {"f", 3.25}, {"rd", {1, -2, 9007199254740992LL, 2.5e-300, "NaN", "-Infinity"}}},
      {{"f", "Infinity"}, {"rf", {0.1, 1e38, -3.4028234663852886e38, 16777217}}},
      {{"b", true}, {"s", "caf\xC3\xA9 \xF0\x9F\x93\x9A \"q\" \\ \n"}, {"by", "AP8Q"}, {"rby", {"", "YQ==", "YWI="}}},
      {{"color", "GREEN"}, {"rcolor", {"RED", 2, 0, 7, -3}}}, {{"color", 2147483647}},
      {{"inner", {{"name", "x"}, {"ns", {1, 2}}, {"child", {{"child", json::object()}}}}}},
      {{"rinner", {json::object(), {{"name", "y"}}}}},
      {{"m_si", {{"a", 1}, {"", 2}}}, {"m_is", {{"-5", "x"}, {"7", ""}}}, {"m_bi", {{"true", json::object()}}},
       {"m_ie", {{"9223372036854775807", "RED"}}}},
      {{"c_s", "chosen"}},
      {{"cInner", {{"name", "z"}}}},
      {{"opt_i", 0}, {"optS", ""}},
      {{"sf32", 3}, {"fx32", 7}, {"mSi", {{"k", 1}}}, {"ri64", {"1", 2}}}, // JSON names and .proto names alike
      {{"i32", nullptr}, {"s", nullptr}, {"rs", nullptr}, {"d", nullptr}, {"b", nullptr}},
  };
  for (const auto& message : taken) {
    INFO(message.dump());
    const int before = check.direct;
    check(message);
    CHECK(check.direct == before + 1);
  }

  const std::vector<json> refused = {
      {{"nope", 1}},                                  // an unknown key
      {{"i32", "abc"}},                               // a string for an int32
      {{"i32", 3000000000LL}},                        // out of range
      {{"i32", -2147483649LL}},
      {{"u32", -1}},
      {{"u64", "-1"}},
      {{"i64", "9223372036854775808"}},
      {{"i32", 1.5}},                                 // not an integer
      {{"color", "BLUE"}},                            // a wrong enum name
      {{"color", "red"}},
      {{"by", "@@@="}},                               // bad base64
      {{"by", "YQ=a"}},
      {{"c_s", "a"}, {"c_i", 1}},                     // two members of a oneof
      {{"s", 5}},                                     // a number for a string
      {{"b", "maybe"}},
      {{"inner", 5}},                                 // a number for a message
      {{"inner", {{"nope", 1}}}},                     // an unknown key, nested
      {{"m_is", {{"x", "y"}}}},                       // a map key that is not its integer
      {{"f", 1e39}},                                  // beyond a float
      {{"ts", "not a time"}},                         // a well-known type: protobuf's
      json::array(),                                  // not an object
  };
  for (const auto& message : refused) {
    INFO(message.dump());
    check(message);
    CHECK_FALSE(gather::grpc::encode_message(types, *every, message).ok);
  }

  // The spellings protobuf takes that the encoder leaves to it: the same bytes, by protobuf.
  const std::vector<json> left = {
      {{"i32", 1.0}}, {{"i32", "007"}}, {{"i64", "1e3"}}, {{"by", "YQ"}}, {{"by", "-_8="}}, {{"b", "true"}},
      {{"color", 2147483648LL}}, {{"ts", "2026-12-07T12:00:00Z"}}, {{"d", "1.5"}}, {{"c_s", nullptr}},
      {{"s", "ok \xC3\x28 not"}}, // ill-formed UTF-8: protobuf gets it with U+FFFD
      {{"rs", "not a list"}},      // protobuf's own leniencies: one element, "yes" as true,
      {{"m_bi", {{"yes", json::object()}}}}, // an integer a double cannot hold rounded
      {{"d", 9007199254740993LL}},
  };
  const int before = check.direct;
  for (const auto& message : left)
    check(message);
  CHECK(check.direct == before);
}

TEST_CASE("gRPC requests: the book page's requests are the encoder's", "[unit][grpc]") {
  json cfg = {{"protos", {{"files", {"linkd/v3/library.proto"}}, {"import_paths", {GATHER_TEST_PROTOS}}}},
              {"routes", {{{"path", "/b"},
                           {"sections", {{{"name", "b"}, {"timeout_ms", 300}, {"required", true},
                                          {"grpc", {{"target", "http://127.0.0.1:1"},
                                                    {"method", "linkd.v3.Library/GetBook"},
                                                    {"message", json::object()}}}}}}}}}};
  auto loaded = gather::load_config(cfg.dump());
  INFO(json(loaded.problems).dump());
  REQUIRE(loaded.value);
  REQUIRE(gather::attach_proto_catalog(*loaded.value).empty());
  const auto& catalog = *loaded.value->descriptors;
  const gather::grpc::message_types types{*catalog.resolver, *catalog.factory, catalog.orders.get()};
  const auto* get = catalog.pool->FindMessageTypeByName("linkd.v3.GetBookRequest");
  const auto* search = catalog.pool->FindMessageTypeByName("linkd.v3.SearchBooksRequest");
  REQUIRE(get);
  REQUIRE(search);
  encode_check get_check{types, *get}, search_check{types, *search};
  get_check({{"isbn", "978-7-111-12345-7"}});
  search_check({{"query", "978-7-111-12345-7"}, {"page_size", 5}});
  search_check({{"pageSize", "5"}, {"filter", {{"tags", {"a"}}, {"minSold", "3"}}}, {"labels", {{"k", "v"}}}});
  CHECK(get_check.direct == 1);
  CHECK(search_check.direct == 2);
  search_check({{"extra", {{"a", 1}}}}); // a google.protobuf.Value: protobuf's
  CHECK(search_check.left == 1);
}
