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

namespace pb = google::protobuf;
using json = nlohmann::json;

namespace {

std::shared_ptr<const gather::proto_catalog> kinds_catalog() {
  json cfg = {{"protos", {{"files", {"gather/test/kinds.proto"}}, {"import_paths", {GATHER_TEST_PROTOS}}}},
              {"routes", {{{"path", "/k"},
                           {"sections", {{{"name", "k"}, {"timeout_ms", 300}, {"required", true},
                                          {"grpc", {{"target", "http://127.0.0.1:1"},
                                                    {"method", "gather.test.Kinds/Echo"},
                                                    {"message", json::object()}}}}}}}}}};
  auto loaded = gather::load_config(cfg.dump());
  REQUIRE(loaded.value);
  REQUIRE(gather::attach_proto_catalog(*loaded.value).empty());
  return loaded.value->descriptors;
}

/// Fills a message at random through reflection, the well-known types with valid values.
class filler {
public:
  explicit filler(unsigned seed) : rng_(seed) {}

  void fill(pb::Message& m, int depth) {
    const auto* type = m.GetDescriptor();
    if (well_known(m, *type, depth))
      return;
    for (int i = 0; i < type->field_count(); ++i) {
      const auto* field = type->field(i);
      if (chance(40))
        continue;
      // What the writer leaves to protobuf's printer, now and then only: most messages test it.
      const auto* kind = field->message_type();
      if (kind && (kind->full_name() == "google.protobuf.Any" || kind->full_name() == "google.protobuf.FieldMask") &&
          chance(90))
        continue;
      if (field->is_map() || field->is_repeated()) {
        const int n = static_cast<int>(rng_() % 4);
        for (int k = 0; k < n; ++k)
          add(m, *field, depth);
        continue;
      }
      set(m, *field, depth);
    }
  }

private:
  bool chance(int percent) { return static_cast<int>(rng_() % 100) < percent; }

  template <class T> T pick(std::initializer_list<T> values) {
    return *(values.begin() + rng_() % values.size());
  }

  double a_double() {
    return pick<double>({0.0, -0.0, 0.1, -2.5, 1e300, -1e-300, 5e-324, 123456789.125,
                         std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity(),
                         std::uniform_real_distribution<double>(-1e6, 1e6)(rng_)});
  }
  float a_float() {
    return pick<float>({0.0f, 0.1f, -3.3f, 1e38f, 1e-45f, 16777217.0f, std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::infinity(),
                        std::uniform_real_distribution<float>(-1e4f, 1e4f)(rng_)});
  }
  std::string a_string() {
    return pick<std::string>({"", "a", "héllo 世界", "\"quote\\ back", "\n\t\x01", "<b>&amp;</b>", "😀",
                              "\xe2\x80\xa8", std::string(300, 'x')});
  }
  std::string some_bytes() {
    std::string out(rng_() % 8, '\0');
    for (auto& c : out)
      c = static_cast<char>(rng_() & 0xff);
    return out;
  }
  int an_enum() { return pick<int>({0, 1, 2, 7}); }

  void set(pb::Message& m, const pb::FieldDescriptor& f, int depth) {
    const auto* r = m.GetReflection();
    using T = pb::FieldDescriptor::CppType;
    switch (f.cpp_type()) {
      case T::CPPTYPE_INT32: r->SetInt32(&m, &f, pick<std::int32_t>({0, -1, 42, INT32_MIN, INT32_MAX})); break;
      case T::CPPTYPE_INT64: r->SetInt64(&m, &f, pick<std::int64_t>({0, -7, INT64_MIN, INT64_MAX, 1LL << 53})); break;
      case T::CPPTYPE_UINT32: r->SetUInt32(&m, &f, pick<std::uint32_t>({0, 1, UINT32_MAX})); break;
      case T::CPPTYPE_UINT64: r->SetUInt64(&m, &f, pick<std::uint64_t>({0, 9, UINT64_MAX})); break;
      case T::CPPTYPE_DOUBLE: r->SetDouble(&m, &f, a_double()); break;
      case T::CPPTYPE_FLOAT: r->SetFloat(&m, &f, a_float()); break;
      case T::CPPTYPE_BOOL: r->SetBool(&m, &f, chance(50)); break;
      case T::CPPTYPE_ENUM: r->SetEnumValue(&m, &f, an_enum()); break;
      case T::CPPTYPE_STRING:
        r->SetString(&m, &f, f.type() == pb::FieldDescriptor::TYPE_BYTES ? some_bytes() : a_string());
        break;
      case T::CPPTYPE_MESSAGE:
        if (depth < 4)
          fill(*r->MutableMessage(&m, &f), depth + 1);
        break;
    }
  }

  void add(pb::Message& m, const pb::FieldDescriptor& f, int depth) {
    const auto* r = m.GetReflection();
    using T = pb::FieldDescriptor::CppType;
    switch (f.cpp_type()) {
      case T::CPPTYPE_INT32: r->AddInt32(&m, &f, static_cast<std::int32_t>(rng_())); break;
      case T::CPPTYPE_INT64: r->AddInt64(&m, &f, static_cast<std::int64_t>(rng_()) << 20); break;
      case T::CPPTYPE_UINT32: r->AddUInt32(&m, &f, static_cast<std::uint32_t>(rng_())); break;
      case T::CPPTYPE_UINT64: r->AddUInt64(&m, &f, static_cast<std::uint64_t>(rng_()) << 30); break;
      case T::CPPTYPE_DOUBLE: r->AddDouble(&m, &f, a_double()); break;
      case T::CPPTYPE_FLOAT: r->AddFloat(&m, &f, a_float()); break;
      case T::CPPTYPE_BOOL: r->AddBool(&m, &f, chance(50)); break;
      case T::CPPTYPE_ENUM: r->AddEnumValue(&m, &f, an_enum()); break;
      case T::CPPTYPE_STRING:
        r->AddString(&m, &f, f.type() == pb::FieldDescriptor::TYPE_BYTES ? some_bytes() : a_string());
        break;
      case T::CPPTYPE_MESSAGE: {
        auto* element = r->AddMessage(&m, &f);
        if (f.is_map()) { // an entry: always a key, a value most of the time
          const auto* key = element->GetDescriptor()->map_key();
          set(*element, *key, depth);
          if (chance(80))
            set(*element, *element->GetDescriptor()->map_value(), depth);
          // One entry per key, as protobuf's writers send a map. (With two, protobuf's printer
          // takes the first, the gateway's writer the last, as protobuf's parser does.)
          const auto key_of = [&](const pb::Message& entry) {
            std::unique_ptr<pb::Message> copy(entry.New());
            copy->CopyFrom(entry);
            copy->GetReflection()->ClearField(copy.get(), entry.GetDescriptor()->map_value());
            return copy->SerializeAsString();
          };
          const int last = r->FieldSize(m, &f) - 1;
          for (int k = 0; k < last; ++k)
            if (key_of(r->GetRepeatedMessage(m, &f, k)) == key_of(*element)) {
              r->RemoveLast(&m, &f);
              break;
            }
        } else if (depth < 4) {
          fill(*element, depth + 1);
        }
        break;
      }
    }
  }

  bool well_known(pb::Message& m, const pb::Descriptor& type, int depth) {
    const auto& name = type.full_name();
    const auto* r = m.GetReflection();
    const auto field = [&](const char* n) { return type.FindFieldByName(n); };
    if (name == "google.protobuf.Timestamp") {
      r->SetInt64(&m, field("seconds"), pick<std::int64_t>({0, -62135596800LL, 253402300799LL, 1796592505,
                                                              static_cast<std::int64_t>(rng_() % 4000000000u)}));
      r->SetInt32(&m, field("nanos"), pick<std::int32_t>({0, 5000000, 123000, 999999999, 7}));
      return true;
    }
    if (name == "google.protobuf.Duration") {
      const bool negative = chance(30);
      const std::int64_t seconds = pick<std::int64_t>({0, 1, 315576000000LL, static_cast<std::int64_t>(rng_() % 100000)});
      const std::int32_t nanos = pick<std::int32_t>({0, 500000000, 1000, 999999999, 3});
      r->SetInt64(&m, field("seconds"), negative ? -seconds : seconds);
      r->SetInt32(&m, field("nanos"), negative ? -nanos : nanos);
      return true;
    }
    if (name == "google.protobuf.Value") {
      if (depth >= 4 || chance(5))
        return true; // a Value with no kind: left to protobuf's printer
      switch (rng_() % 6) {
        case 0: r->SetEnumValue(&m, field("null_value"), 0); break;
        case 1: r->SetDouble(&m, field("number_value"), pick<double>({0.5, -3.0, 1e21, 0.1})); break;
        case 2: r->SetString(&m, field("string_value"), a_string()); break;
        case 3: r->SetBool(&m, field("bool_value"), chance(50)); break;
        case 4: fill(*r->MutableMessage(&m, field("struct_value")), depth + 1); break;
        default: fill(*r->MutableMessage(&m, field("list_value")), depth + 1); break;
      }
      return true;
    }
    if (name == "google.protobuf.Any") {
      if (chance(50)) {
        r->SetString(&m, field("type_url"), "type.googleapis.com/gather.test.Inner");
        r->SetString(&m, field("value"), std::string("\x0a\x01x", 3)); // Inner{name: "x"}
      }
      return true;
    }
    if (name == "google.protobuf.FieldMask") {
      r->AddString(&m, field("paths"), "a_b.c_d");
      return true;
    }
    return false; // Struct, ListValue, wrappers, Empty: filled as any message
  }

  std::mt19937 rng_;
};

} // namespace

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
