// Fuzzes what a gRPC downstream sends once its head is read: the DATA bytes through the frame
// reader (include/gather/downstream/grpc_wire.hpp), then each message to JSON as a section's data
// (grpc_json.hpp) over a Book-like type that has every kind of field the mapping prints
// differently (strings, int32, int64, an enum, a repeated field, a map, a nested message,
// Timestamp and Value). Input: byte 0 seeds how the bytes are cut into DATA chunks, byte 1 picks
// the size caps (tiny ones reach them), the rest is the stream.
// Invariants: the messages and the error are the same however the bytes are cut; no message and
// no stream is over its cap; a decoded message is a JSON object,
// and decoding it again after encoding its JSON gives the same JSON.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/type_resolver.h>
#include <google/protobuf/util/type_resolver_util.h>
#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "read_cuts.hpp"
#include "gather/downstream/grpc/grpc_json.hpp"
#include "gather/downstream/grpc/grpc_wire.hpp"

namespace {

namespace pb = google::protobuf;

constexpr const char* book_proto = R"(
syntax = "proto3";
package fuzz;
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
enum Format { FORMAT_UNSPECIFIED = 0; PAPER = 1; EBOOK = 2; }
message Filter { repeated string tags = 1; int64 min_sold = 2; }
message Book {
  string isbn = 1; string title = 2; int32 stock = 4; Format format = 5; int64 sold = 6;
  repeated string tags = 7; google.protobuf.Timestamp published = 8; Filter filter = 9;
  map<string, int64> counts = 10; google.protobuf.Value extra = 11; bytes cover = 12;
  double rating = 13; uint64 big = 14; bool available = 15; repeated Book similar = 16;
}
)";

/// Copies a well-known file (and what it imports) from libprotobuf's own pool into `pool`.
void add_well_known(pb::DescriptorPool& pool, const std::string& name) {
  if (pool.FindFileByName(name))
    return;
  const auto* file = pb::DescriptorPool::generated_pool()->FindFileByName(name);
  FUZZ_CHECK(file);
  for (int i = 0; i < file->dependency_count(); ++i)
    add_well_known(pool, file->dependency(i)->name());
  pb::FileDescriptorProto proto;
  file->CopyTo(&proto);
  FUZZ_CHECK(pool.BuildFile(proto));
}

struct book_types {
  pb::DescriptorPool pool;
  std::unique_ptr<pb::util::TypeResolver> resolver;
  std::unique_ptr<pb::DynamicMessageFactory> factory;

  book_types() {
    pb::io::ArrayInputStream input(book_proto, static_cast<int>(std::string(book_proto).size()));
    pb::io::Tokenizer tokenizer(&input, nullptr);
    pb::compiler::Parser parser;
    pb::FileDescriptorProto proto;
    proto.set_name("fuzz/book.proto");
    FUZZ_CHECK(parser.Parse(&tokenizer, &proto));
    add_well_known(pool, "google/protobuf/struct.proto");
    add_well_known(pool, "google/protobuf/timestamp.proto");
    FUZZ_CHECK(pool.BuildFile(proto));
    resolver.reset(pb::util::NewTypeResolverForDescriptorPool("type.googleapis.com", &pool));
    factory = std::make_unique<pb::DynamicMessageFactory>(&pool);
  }
};

struct reading {
  std::vector<std::string> messages;
  std::string error;
  bool inside = false;
};

reading read_all(const std::string& stream, std::uint32_t seed, std::size_t max_message,
                 std::size_t max_total) {
  gather::grpc::frame_reader reader(max_message, max_total);
  fuzz::read_cuts cuts{seed, 32};
  reading out;
  std::size_t at = 0;
  while (at < stream.size()) {
    const std::size_t n = cuts.next(stream.size() - at);
    if (!reader.feed(std::string_view(stream).substr(at, n), out.messages))
      break;
    at += n;
  }
  out.error = reader.error();
  out.inside = reader.inside_message();
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  static book_types types;
  const std::uint32_t seed = data[0];
  const std::size_t max_message = data[1] & 1 ? 64 : 1 << 20;
  const std::size_t max_total = data[1] & 2 ? 128 : 1 << 22;
  const std::string stream(reinterpret_cast<const char*>(data + 2), size - 2);

  const auto whole = read_all(stream, 0, max_message, max_total);
  const auto cut = read_all(stream, seed | 1, max_message, max_total);
  FUZZ_CHECK(whole.messages == cut.messages);
  FUZZ_CHECK(whole.error == cut.error);
  std::size_t total = 0;
  for (const auto& message : whole.messages) {
    FUZZ_CHECK(message.size() <= max_message);
    total += message.size();
  }
  FUZZ_CHECK(total <= max_total);

  const gather::grpc::message_types codec{*types.resolver, *types.factory};
  const auto* book = types.pool.FindMessageTypeByName("fuzz.Book");
  FUZZ_CHECK(book);
  for (const auto& message : whole.messages) {
    const auto decoded = gather::grpc::decode_message(codec, *book, message);
    if (!decoded.ok) {
      FUZZ_CHECK(!decoded.error.empty());
      continue;
    }
    const auto json = nlohmann::json::parse(decoded.text, nullptr, false);
    FUZZ_CHECK(json.is_object());
    const auto again = gather::grpc::encode_message(codec, *book, json);
    FUZZ_CHECK(again.ok);
    const auto twice = gather::grpc::decode_message(codec, *book, again.text);
    FUZZ_CHECK(twice.ok);
    FUZZ_CHECK(nlohmann::json::parse(twice.text, nullptr, false) == json);
  }
  return 0;
}
