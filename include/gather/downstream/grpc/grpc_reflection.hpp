// Descriptors asked of the gRPC servers themselves (docs/grpc.md, "Server reflection"): the
// targets with `"reflection": true` are asked with gRPC server reflection
// (grpc.reflection.v1.ServerReflection/ServerReflectionInfo, else v1alpha, which Debian's grpc++
// speaks) for the files of the services their sections name, and of what those import.
//
// When it runs, so that no thread ever waits on the network for it on a request's way:
// - at start: the gateway asks every target before it listens, waiting (on its own thread, not a
//   loop) at most protos.reflection.start_wait_ms for the answers;
// - on reload: the new generation asks again, without waiting; until the answers come it serves
//   with what the targets gave before (a target's source is kept across reloads);
// - when a request names a method no descriptor has: its section ends `error` at once (no call,
//   no wait), and the target is asked again, at most once per protos.reflection.pace_ms. Requests that
//   begin after the answer came find the method.
// Each ask is a few gRPC calls on the loops (one per symbol, then one per file a dependency names
// that did not come), through the gateway's downstream client, bounded by the reflection_limits of
// the generation that asked; the answers are only recorded there.
// The pool that serves them is built on the first request after, from the generation's `protos`
// and every target's files (live_catalog::current), so a generation never changes under a request.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.pb.h>

#include "gather/config/config.hpp"

namespace gather {

class downstream_client;
struct proto_catalog;

/// A line for the log (the gateway writes it; this library does not log).
using reflection_log = std::function<void(const std::string& json_line)>;

/// Wire form of the two reflection messages used (the same field numbers in v1 and v1alpha).
namespace reflection_wire {
/// ServerReflectionRequest{file_containing_symbol: symbol}, or {file_by_filename: file}.
std::string symbol_request(const std::string& symbol);
std::string file_request(const std::string& file);
/// A ServerReflectionResponse read: the serialized FileDescriptorProtos of a
/// file_descriptor_response, or the error_response's text. false: not a response at all.
struct response {
  std::vector<std::string> files;
  bool is_error = false;
  int error_code = 0;
  std::string error_message;
};
bool parse_response(const std::string& bytes, response& out);
} // namespace reflection_wire

/// One target's reflection: what it gave (kept across reloads) and its asks.
class reflection_source : public std::enable_shared_from_this<reflection_source> {
public:
  reflection_source(std::string target, reflection_log log);

  const std::string& target() const { return target_; }
  /// Asks for the files of `services` (and their imports) through `client`, on its loops, within
  /// `limits`. An ask while one runs is made after it, with the limits of the latest such ask.
  /// Thread-safe.
  void ask(downstream_client& client, std::vector<std::string> services, const reflection_limits& limits);
  /// A request named a method of `service` that no descriptor has: ask, unless an ask for an
  /// unknown method began less than limits.pace ago. Thread-safe.
  void ask_unknown(downstream_client& client, const std::string& service, const reflection_limits& limits);

  /// Every file the target gave, the latest of each name. Takes a lock: callers ask again only
  /// when version() changed.
  std::vector<google::protobuf::FileDescriptorProto> files() const;
  /// Grows with every answer recorded (0: none yet).
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
  /// Asks that ended, whatever their result: the tests' and the start's witness.
  std::uint64_t asks_done() const { return asks_done_.load(std::memory_order_acquire); }
  /// Asks an unknown method made (the pace let them through).
  std::uint64_t unknown_asks() const { return unknown_asks_.load(std::memory_order_acquire); }
  /// Waits (a thread of its own, never a loop) until `count` asks ended or `until` passed.
  bool wait_asks(std::uint64_t count, std::chrono::steady_clock::time_point until) const;
  /// "v1", "v1alpha", or "" while no server answered.
  std::string api() const;

private:
  struct round;
  void start_round(downstream_client& client, std::vector<std::string> services, const reflection_limits& limits);
  void next_call(downstream_client& client, std::shared_ptr<round> r);
  void end_round(downstream_client& client, const std::shared_ptr<round>& r, bool ok, const std::string& why);

  const std::string target_;
  const reflection_log log_;
  mutable std::mutex mutex_;
  mutable std::condition_variable ended_;
  std::map<std::string, google::protobuf::FileDescriptorProto> files_; ///< by name
  bool running_ = false;
  std::set<std::string> waiting_; ///< services asked while a round ran
  reflection_limits waiting_limits_; ///< the limits of the latest ask that waited
  bool v1alpha_ = false;          ///< v1 answered UNIMPLEMENTED: speak v1alpha from then on
  bool answered_ = false;
  std::atomic<std::uint64_t> version_{0};
  std::atomic<std::uint64_t> asks_done_{0};
  std::atomic<std::uint64_t> unknown_asks_{0};
  std::atomic<std::int64_t> last_unknown_ns_{-(std::int64_t{1} << 62)};
};

/// The gateway's sources, one per target, kept across reloads.
class reflection_registry {
public:
  explicit reflection_registry(reflection_log log = {});
  std::shared_ptr<reflection_source> source_for(const std::string& target);
  /// From now on asks go through `client` (the gateway's, which outlives the asks' answers).
  void start(downstream_client& client) { client_.store(&client); }
  downstream_client* client() const { return client_.load(); }
  const reflection_log& log() const { return log_; }

private:
  reflection_log log_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<reflection_source>> sources_;
  std::atomic<downstream_client*> client_{nullptr};
};

/// One generation's descriptors: its `protos` plus what its reflection targets gave.
class live_catalog {
public:
  /// `cfg` (with its descriptors built) is the generation's and outlives this.
  live_catalog(const config& cfg, reflection_registry& registry);
  /// The catalog a request begins with: the one last built, built again first when a target gave
  /// new files since (a pool of a few files: CPU only, once per answer).
  std::shared_ptr<const proto_catalog> current() const;
  /// Asks every target for the services its sections name (start, reload).
  void ask_all() const;
  /// A request named `call`'s method and no descriptor has it (docs/grpc.md).
  void unknown(const grpc_call_config& call) const;
  /// Start: waits (the caller's thread) until every target answered once or the generation's
  /// protos.reflection.start_wait passed.
  void wait_first() const;
  /// Its targets' sources, by target (for the tests: each source's asks_done() and wait_asks()).
  const std::map<std::string, std::shared_ptr<reflection_source>>& sources() const { return sources_; }

private:
  std::uint64_t versions() const;
  const config& cfg_;
  reflection_registry& registry_;
  std::map<std::string, std::shared_ptr<reflection_source>> sources_;   ///< by target
  std::map<std::string, std::vector<std::string>> services_;            ///< by target
  /// By target: its asks ended when ask_all() last asked (ask_all and wait_first run on the
  /// gateway's thread that makes and starts generations).
  mutable std::map<std::string, std::uint64_t> asks_at_start_;
  mutable std::mutex build_mutex_; ///< held by the one request building a new catalog
  mutable std::mutex mutex_;       ///< guards catalog_
  mutable std::shared_ptr<const proto_catalog> catalog_;
  mutable std::atomic<std::uint64_t> built_{0};
};

/// Whether any gRPC call of `cfg` has `"reflection": true`.
bool has_reflection(const config& cfg);

} // namespace gather
