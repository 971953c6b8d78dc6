// Messages of every kind of field for the gRPC JSON tests (grpc_json_test.cpp: answers,
// grpc_encode_test.cpp: requests): the catalog of tests/downstream/protos/gather/test/kinds.proto
// and a filler that sets a message's fields at random through reflection.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include "gather/config/config.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"

namespace kinds_test {

namespace pb = google::protobuf;
using json = nlohmann::json;

inline std::shared_ptr<const gather::proto_catalog> kinds_catalog() {
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


} // namespace kinds_test
