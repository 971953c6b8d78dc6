// The one call interface the actors use for every protocol (HTTP/1.1, HTTP/2 JSON with
// "http2": true, gRPC): the actor (through its attempt runner, attempt_runner.hpp) builds one
// call_description, start_call() starts it and, on the loop that ran it, turns its answer into
// the one verdict a section or a batch call takes (status, whether it may be retried, the data
// projected by `fields`), and cancel_call() ends it early. The actor never knows which protocol
// carried it; below this face each protocol keeps only its loop's own state (downstream_client's
// transfer_request for HTTP/1.1 and HTTP/2 JSON, grpc_call_request and stream_request for gRPC).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/downstream/answer/downstream_answer.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/downstream/grpc/grpc_json.hpp"
#include "gather/downstream/upstream/upstream_table.hpp"

namespace gather {

struct grpc_method_plan;
struct proto_catalog;

/// A gRPC call's part of a section's call: what the coordinator rendered and encoded.
struct grpc_call_part {
  /// Its descriptors (a generation's, or what reflection added to them), held for as long as the
  /// call's completion may run on its loop (after the request and its generation are gone, when
  /// the worker quit first); `plan` points into them. Both null on a cluster node, which has no
  /// descriptors: its call answers with the messages as they came (answer_verdict::messages),
  /// which the gateway that sent the work decodes (grpc_data_of).
  std::shared_ptr<const proto_catalog> catalog;
  const grpc_method_plan* plan = nullptr;
  std::string path;    ///< "/package.Service/Method"
  std::string message; ///< the request message, serialized
  /// 0 for a unary method; a server stream's grpc.max_messages (at least 1): the call is
  /// cancelled after that many.
  std::size_t max_messages = 0;
};

/// One call: what an actor's attempt asks of the downstream, whatever the protocol.
struct call_description {
  std::string url;          ///< the URL, or the gRPC target (origin)
  std::string header_lines; ///< "Name: value\r\n" each, the call's span begun on them
  std::string deadline_header; ///< a gRPC call's, its name (lower case) when set: not sent as metadata
  millis timeout{1000};     ///< what is left of the attempt
  millis left{1000};        ///< until the request's deadline (gRPC: grpc-timeout is the smaller)
  std::size_t max_response_bytes = 8 * 1024 * 1024;
  std::vector<field_path> fields;
  std::size_t max_items = 0; ///< an array's first N elements, after fields (0: all)
  bool http2 = false;
  std::shared_ptr<const grpc_call_part> grpc; ///< set for a gRPC section; the completion holds it
  std::string method = "GET"; ///< an HTTP write's
  std::string body;           ///< an HTTP write's
  bool write = false;         ///< a route's write: classify_write_answer (downstream_answer.hpp)
  bool pass_errors = false;
  std::chrono::microseconds slow_after{0};
  std::function<void()> slow{};
  /// The section's upstream (docs/upstreams.md): the call goes to one of its endpoints, picked
  /// here; null: to the URL's own origin.
  std::shared_ptr<upstream_table> upstream;
  /// The URL template's origin, split once (url_split.hpp); null: the URL is split per call.
  std::shared_ptr<const split_origin> origin;
  /// The endpoints the section's earlier calls went to (their ids): a retry or a hedge goes to
  /// another one when there is one.
  std::vector<std::uint32_t> avoid;
  /// Where the id of the endpoint picked is written (left alone when none was); may be null.
  std::uint32_t* picked = nullptr;
};

using verdict_completion = std::function<void(answer_verdict&&)>;

/// Starts the call; `done` runs once on the loop that ran it (never if the id is cancelled first).
/// A call to an upstream's endpoint tells the table how it ended (ok, a failure of the machine,
/// or another answer): its verdict names the endpoint; a cancelled one only leaves its flight.
std::uint64_t start_call(downstream_client& client, call_description&& call, verdict_completion&& done);

/// Cancels call `id` (start_call's): thread-safe, idempotent; `done` never runs once its loop has
/// taken it (downstream_client::cancel).
inline void cancel_call(downstream_client& client, std::uint64_t id) { client.cancel(id); }

/// The messages of a gRPC call that ended OK as a section's data, with `call`'s descriptors: each
/// decoded to JSON (the three print choices of grpc_json.hpp) and projected by `fields`; a
/// stream's the array of them cut to `max_items` (0: all), a unary method's its one message. Not
/// ok when a message does not parse as the output type (`error` says why).
grpc::conversion grpc_data_of(const std::vector<std::string>& messages, const grpc_call_part& call,
                              const std::vector<field_path>& fields, std::size_t max_items);

/// "Name: value\r\n" lines as gRPC metadata: names lower case; grpc-* names, hop-by-hop ones,
/// accept, `skip` (the deadline header) and values that are not printable ASCII are never sent.
std::vector<std::pair<std::string, std::string>> metadata_of(const std::string& header_lines,
                                                             const std::string& skip);

} // namespace gather
