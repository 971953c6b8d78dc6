// A gRPC call over the downstream client's HTTP/2 (stream_call.hpp): the request as gRPC sends it
// (POST /package.Service/Method, te: trailers, content-type application/grpc, grpc-timeout, the
// metadata, the one length-prefixed message) and its answer read as it arrives (grpc_answer.hpp),
// a server stream cancelled (RST_STREAM CANCEL) once it brought max_messages.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "gather/config/config.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/downstream/grpc/grpc_answer.hpp"

namespace gather {

struct grpc_call_request {
  std::string target;       ///< "http(s)://host:port"
  std::string path;         ///< "/package.Service/Method"
  grpc::fields metadata;    ///< lower-case names; never grpc-* or hop-by-hop (the caller's to filter)
  std::string message;      ///< the request message, serialized (framed here)
  millis timeout{1000};     ///< the call as the client bounds it (RST_STREAM CANCEL when it passes)
  millis grpc_timeout{1000}; ///< what the server is told (grpc-timeout)
  std::size_t max_response_bytes = 8 * 1024 * 1024; ///< the messages' bytes, all together
  std::size_t max_messages = 0; ///< 0: unary; a server stream is cancelled after this many
  std::chrono::microseconds slow_after{0}; ///< as stream_request's (a hedge's trigger)
  std::function<void()> slow{};
  /// An upstream's endpoint (call_target.hpp) the target's host names; null: the target itself.
  std::shared_ptr<const call_target> endpoint{};
};

using grpc_completion = std::function<void(grpc::call_result&&)>;

/// Starts the call on `client`; `done` runs once on the loop that ran it (unless the id is
/// cancelled first: the server then sees RST_STREAM CANCEL and `done` never runs). Returns the id
/// downstream_client::cancel() takes.
std::uint64_t start_grpc_call(downstream_client& client, grpc_call_request request, grpc_completion done);

} // namespace gather
