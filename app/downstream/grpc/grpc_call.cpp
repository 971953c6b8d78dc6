#include "gather/downstream/grpc/grpc_call.hpp"

#include "gather/downstream/grpc/grpc_wire.hpp"

namespace gather {

namespace {

grpc::stream_end_kind kind_of(stream_ending how) {
  switch (how) {
  case stream_ending::complete: return grpc::stream_end_kind::complete;
  case stream_ending::stopped: return grpc::stream_end_kind::stopped;
  case stream_ending::reset: return grpc::stream_end_kind::reset;
  case stream_ending::timeout: return grpc::stream_end_kind::timeout;
  case stream_ending::too_large: return grpc::stream_end_kind::too_large;
  case stream_ending::protocol: return grpc::stream_end_kind::protocol;
  case stream_ending::refused:
  case stream_ending::connection: break;
  }
  return grpc::stream_end_kind::unavailable;
}

/// The call's event sink: every event goes to the answer reader, the end to the completion.
class grpc_events final : public stream_events {
public:
  grpc_events(std::size_t max_messages, std::size_t max_bytes, grpc_completion done)
      : reader_(max_messages, max_bytes), done_(std::move(done)) {}

  bool on_head(stream_head&& head) override {
    return reader_.on_head(head.status, head.headers, head.ends_stream);
  }
  bool on_data(std::string_view chunk) override { return reader_.on_data(chunk); }
  void on_trailers(header_list&& trailers) override { reader_.on_trailers(trailers); }
  void on_end(stream_end&& end) override {
    done_(reader_.finish(kind_of(end.how), end.reset_code, std::move(end.detail)));
  }

private:
  grpc::answer_reader reader_;
  grpc_completion done_;
};

} // namespace

std::uint64_t start_grpc_call(downstream_client& client, grpc_call_request request, grpc_completion done) {
  stream_request call;
  call.url = request.target + request.path;
  call.method = "POST";
  call.headers.reserve(request.metadata.size() + 4);
  call.headers.emplace_back("te", "trailers");
  call.headers.emplace_back("content-type", "application/grpc");
  call.headers.emplace_back("grpc-timeout", grpc::timeout_text(request.grpc_timeout));
  call.headers.emplace_back("user-agent", "gather/" GATHER_VERSION);
  for (auto& field : request.metadata)
    call.headers.push_back(std::move(field));
  call.body = grpc::frame(request.message);
  call.timeout = request.timeout;
  // DATA carries a 5-byte prefix per message besides the messages the reader bounds.
  call.max_response_bytes = request.max_response_bytes + 5 * (request.max_messages + 2);
  call.slow_after = request.slow_after;
  call.slow = std::move(request.slow);
  call.target = std::move(request.endpoint);
  auto events = std::make_shared<grpc_events>(request.max_messages, request.max_response_bytes,
                                              std::move(done));
  return client.call(std::move(call), std::move(events));
}

} // namespace gather
