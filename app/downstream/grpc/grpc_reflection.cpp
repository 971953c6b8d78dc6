// gRPC server reflection (grpc_reflection.hpp): the two messages on the wire, one target's asks
// (a round of calls on the loops, each started from the previous one's completion), and the
// generations' catalogs built from what the targets gave.
#include "gather/downstream/grpc/grpc_reflection.hpp"

#include <nlohmann/json.hpp>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "gather/downstream/grpc/grpc_call.hpp"
#include "gather/downstream/grpc/grpc_wire.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"
#include "gather/values/wall_clock.hpp"

namespace gather {

namespace pb = google::protobuf;
using wire = pb::internal::WireFormatLite;

namespace reflection_wire {

namespace {

/// One length-delimited field: tag, length, bytes.
std::string delimited(int field, const std::string& bytes) {
  std::string out;
  pb::io::StringOutputStream stream(&out);
  pb::io::CodedOutputStream coded(&stream);
  coded.WriteTag(wire::MakeTag(field, wire::WIRETYPE_LENGTH_DELIMITED));
  coded.WriteVarint32(static_cast<std::uint32_t>(bytes.size()));
  coded.WriteString(bytes);
  coded.Trim();
  return out;
}

// ServerReflectionRequest (grpc/reflection/v{1,1alpha}/reflection.proto): file_by_filename = 3,
// file_containing_symbol = 4. ServerReflectionResponse: file_descriptor_response = 4
// (FileDescriptorResponse: repeated bytes file_descriptor_proto = 1), error_response = 7
// (ErrorResponse: int32 error_code = 1, string error_message = 2).
constexpr int request_file_by_filename = 3;
constexpr int request_file_containing_symbol = 4;
constexpr int response_file_descriptor = 4;
constexpr int response_error = 7;

bool read_delimited(pb::io::CodedInputStream& in, std::string& out) {
  std::uint32_t size = 0;
  return in.ReadVarint32(&size) && in.ReadString(&out, static_cast<int>(size));
}

bool parse_files(const std::string& bytes, response& out) {
  pb::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  while (const auto tag = in.ReadTag()) {
    if (wire::GetTagFieldNumber(tag) == 1 && wire::GetTagWireType(tag) == wire::WIRETYPE_LENGTH_DELIMITED) {
      if (!read_delimited(in, out.files.emplace_back()))
        return false;
    } else if (!wire::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

bool parse_error(const std::string& bytes, response& out) {
  pb::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  out.is_error = true;
  while (const auto tag = in.ReadTag()) {
    const int field = wire::GetTagFieldNumber(tag);
    std::uint32_t code = 0;
    if (field == 1 && wire::GetTagWireType(tag) == wire::WIRETYPE_VARINT) {
      if (!in.ReadVarint32(&code))
        return false;
      out.error_code = static_cast<int>(code);
    } else if (field == 2 && wire::GetTagWireType(tag) == wire::WIRETYPE_LENGTH_DELIMITED) {
      if (!read_delimited(in, out.error_message))
        return false;
    } else if (!wire::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

} // namespace

std::string symbol_request(const std::string& symbol) {
  return delimited(request_file_containing_symbol, symbol);
}

std::string file_request(const std::string& file) {
  return delimited(request_file_by_filename, file);
}

bool parse_response(const std::string& bytes, response& out) {
  pb::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  bool answered = false;
  while (const auto tag = in.ReadTag()) {
    const int field = wire::GetTagFieldNumber(tag);
    if ((field == response_file_descriptor || field == response_error) &&
        wire::GetTagWireType(tag) == wire::WIRETYPE_LENGTH_DELIMITED) {
      std::string inner;
      if (!read_delimited(in, inner) ||
          !(field == response_file_descriptor ? parse_files(inner, out) : parse_error(inner, out)))
        return false;
      answered = true;
    } else if (!wire::SkipField(&in, tag)) {
      return false;
    }
  }
  return answered && in.ConsumedEntireMessage();
}

} // namespace reflection_wire

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// A call's own words about its bounds, named as the configuration names them: the call's
/// max_response_bytes and timeout are protos.reflection's max_bytes and timeout_ms.
std::string in_reflection_terms(std::string detail, const reflection_limits& limits) {
  const std::string bytes = "max_response_bytes";
  const std::string named = "protos.reflection.max_bytes";
  for (auto at = detail.find(bytes); at != std::string::npos; at = detail.find(bytes, at + named.size()))
    detail.replace(at, bytes.size(), named);
  // The value, once, where the client's words do not give it already.
  if (const auto at = detail.find(named); at != std::string::npos && detail.find(named + " (") == std::string::npos)
    detail.insert(at + named.size(), " (" + std::to_string(limits.max_bytes) + ")");
  const std::string timeout = "the call's timeout passed";
  if (detail.compare(0, timeout.size(), timeout) == 0)
    detail.insert(timeout.size(), " (protos.reflection.timeout_ms " + std::to_string(limits.call_timeout.count()) + ")");
  return detail;
}

} // namespace

/// One ask: the symbols still to ask, then the files their imports name that did not come.
struct reflection_source::round {
  std::vector<std::string> symbols;
  std::size_t next_symbol = 0;
  std::vector<std::string> wanted_files; ///< asked by file name, last first
  std::set<std::string> asked_files;
  std::map<std::string, pb::FileDescriptorProto> got;
  std::vector<std::string> problems; ///< what the server said it lacks
  std::size_t calls = 0;
  bool v1alpha = false;
  reflection_limits limits;
};

reflection_source::reflection_source(std::string target, reflection_log log)
  : target_(std::move(target)), log_(std::move(log)) {
}

void reflection_source::ask(downstream_client& client, std::vector<std::string> services,
                            const reflection_limits& limits) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_) {
      waiting_.insert(services.begin(), services.end());
      waiting_limits_ = limits;
      return;
    }
    running_ = true;
  }
  start_round(client, std::move(services), limits);
}

void reflection_source::ask_unknown(downstream_client& client, const std::string& service,
                                    const reflection_limits& limits) {
  const auto now = now_ns();
  auto last = last_unknown_ns_.load(std::memory_order_relaxed);
  const auto pace = std::chrono::duration_cast<std::chrono::nanoseconds>(limits.pace).count();
  if (now - last < pace || !last_unknown_ns_.compare_exchange_strong(last, now))
    return;
  unknown_asks_.fetch_add(1, std::memory_order_acq_rel);
  ask(client, {service}, limits);
}

std::vector<pb::FileDescriptorProto> reflection_source::files() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<pb::FileDescriptorProto> out;
  out.reserve(files_.size());
  for (const auto& [name, file] : files_)
    out.push_back(file);
  return out;
}

bool reflection_source::wait_asks(std::uint64_t count, std::chrono::steady_clock::time_point until) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return ended_.wait_until(lock, until, [&] { return asks_done_.load() >= count; });
}

std::string reflection_source::api() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return answered_ ? (v1alpha_ ? "v1alpha" : "v1") : "";
}

void reflection_source::start_round(downstream_client& client, std::vector<std::string> services,
                                    const reflection_limits& limits) {
  auto r = std::make_shared<round>();
  r->symbols = std::move(services);
  r->limits = limits;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    r->v1alpha = v1alpha_;
  }
  next_call(client, std::move(r));
}

void reflection_source::next_call(downstream_client& client, std::shared_ptr<round> r) {
  std::string request;
  if (r->next_symbol < r->symbols.size()) {
    request = reflection_wire::symbol_request(r->symbols[r->next_symbol]);
  } else {
    // The imports that did not come with the files (a server may leave out files it sent before
    // on the same stream; each ask here is a stream of its own) nor are libprotobuf's own.
    for (const auto& [name, file] : r->got)
      for (const auto& dependency : file.dependency())
        if (!r->got.count(dependency) && !r->asked_files.count(dependency) &&
            !pb::DescriptorPool::generated_pool()->FindFileByName(dependency)) {
          r->asked_files.insert(dependency);
          r->wanted_files.push_back(dependency);
        }
    if (r->wanted_files.empty())
      return end_round(client, r, !r->got.empty(), r->got.empty() ? "the server gave no file" : "");
    request = reflection_wire::file_request(r->wanted_files.back());
  }
  if (++r->calls > r->limits.max_calls)
    return end_round(client, r, false, "more than protos.reflection.max_calls (" +
                                            std::to_string(r->limits.max_calls) + ") calls");
  grpc_call_request call;
  call.target = target_;
  call.path = r->v1alpha ? "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
                         : "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
  call.message = std::move(request);
  call.timeout = call.grpc_timeout = r->limits.call_timeout;
  call.max_response_bytes = r->limits.max_bytes;
  auto self = shared_from_this();
  start_grpc_call(client, std::move(call), [self, r, &client](grpc::call_result&& result) mutable {
    if (result.code == grpc::unimplemented && !r->v1alpha) {
      r->v1alpha = true; // Debian's grpc++ (1.51) speaks only v1alpha
      return self->next_call(client, std::move(r));
    }
    if (result.code != grpc::ok || result.messages.size() != 1) {
      std::string why = std::string("ServerReflectionInfo ended ") + grpc::code_name(result.code);
      if (!result.message.empty())
        why += ": " + result.message;
      else if (!result.detail.empty())
        why += ": " + in_reflection_terms(result.detail, r->limits);
      return self->end_round(client, r, false, why);
    }
    reflection_wire::response answer;
    if (!reflection_wire::parse_response(result.messages.front(), answer))
      return self->end_round(client, r, false, "the answer is not a ServerReflectionResponse");
    const bool by_symbol = r->next_symbol < r->symbols.size();
    const std::string asked = by_symbol ? r->symbols[r->next_symbol] : r->wanted_files.back();
    if (by_symbol)
      ++r->next_symbol;
    else
      r->wanted_files.pop_back();
    if (answer.is_error)
      r->problems.push_back(asked + ": " + answer.error_message + " (" + grpc::code_name(answer.error_code) + ")");
    for (const auto& bytes : answer.files) {
      pb::FileDescriptorProto file;
      if (!file.ParseFromString(bytes) || file.name().empty())
        return self->end_round(client, r, false, "a file_descriptor_proto of " + asked + " does not parse");
      auto name = file.name();
      r->got.insert_or_assign(std::move(name), std::move(file));
    }
    self->next_call(client, std::move(r));
  });
}

void reflection_source::end_round(downstream_client& client, const std::shared_ptr<round>& r, bool ok,
                                  const std::string& why) {
  std::vector<std::string> again;
  reflection_limits again_limits;
  bool had_files = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    had_files = !files_.empty();
    if (ok) {
      for (auto& [name, file] : r->got)
        files_.insert_or_assign(name, std::move(file));
      v1alpha_ = r->v1alpha;
      answered_ = true;
      version_.fetch_add(1, std::memory_order_acq_rel);
    }
    again.assign(waiting_.begin(), waiting_.end());
    again_limits = waiting_limits_;
    waiting_.clear();
    running_ = !again.empty();
    asks_done_.fetch_add(1, std::memory_order_acq_rel);
  }
  ended_.notify_all();
  if (log_) {
    nlohmann::ordered_json line{{"event", "grpc_reflection"}, {"ts", unix_seconds()}, {"target", target_}};
    line["result"] = ok ? "ok" : had_files ? "failed, keeping the files it gave before" : "failed";
    line["api"] = r->v1alpha ? "v1alpha" : "v1";
    line["files"] = r->got.size();
    std::string detail = why;
    for (const auto& problem : r->problems)
      detail += (detail.empty() ? "" : "; ") + problem;
    if (!detail.empty())
      line["detail"] = detail;
    log_(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  if (!again.empty())
    start_round(client, std::move(again), again_limits);
}

reflection_registry::reflection_registry(reflection_log log) : log_(std::move(log)) {
}

std::shared_ptr<reflection_source> reflection_registry::source_for(const std::string& target) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& source = sources_[target];
  if (!source)
    source = std::make_shared<reflection_source>(target, log_);
  return source;
}

} // namespace gather
