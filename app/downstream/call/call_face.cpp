// The call face (call_face.hpp): one call_description to the protocol that carries it (an
// upstream's endpoint picked first), and its answer to one verdict on the loop that ran it.
#include "gather/downstream/call/call_face.hpp"

#include <algorithm>

#include "gather/downstream/grpc/grpc_call.hpp"
#include "gather/downstream/call/header_names.hpp"
#include "gather/downstream/grpc/grpc_json.hpp"
#include "gather/downstream/grpc/grpc_message_json.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"

namespace gather {

namespace {

/// A gRPC call's result as a section's verdict: OK with its data (grpc_data_of), or on a cluster
/// node, which has no descriptors, with its messages as they came; the code decides the rest.
answer_verdict verdict_of(grpc::call_result&& result, const grpc_call_part& call,
                          const std::vector<field_path>& fields, std::size_t max_items,
                          bool pass_errors) {
  answer_verdict v;
  v.http_status = result.http_status;
  v.grpc_code = result.code;
  v.status = grpc::status_of(result.code);
  v.retryable = grpc::retryable(result.code);
  if (pass_errors && v.status != section_status::ok && result.code > 0)
    v.passed = nlohmann::json{{"message", result.message}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (v.status != section_status::ok) { // the code is the log's "grpc"; this says the rest
    v.detail = result.message;
    if (!result.detail.empty())
      v.detail = v.detail.empty() ? result.detail : v.detail + " (" + result.detail + ")";
    return v;
  }
  if (!call.catalog) {
    v.messages = std::move(result.messages);
    return v;
  }
  auto data = grpc_data_of(result.messages, call, fields, max_items);
  if (!data.ok) {
    v.status = section_status::error;
    v.retryable = false;
    v.detail = std::move(data.error);
    return v;
  }
  v.data = std::move(data.text);
  return v;
}

/// A call's hold on the endpoint it was picked for: its end reported once; a call cancelled
/// before it ended (a hedge that lost) only leaves the endpoint's calls in flight.
struct endpoint_call {
  std::shared_ptr<upstream_table> table;
  std::shared_ptr<upstream_endpoint> endpoint;
  bool reported = false;

  endpoint_call(std::shared_ptr<upstream_table> t, std::shared_ptr<upstream_endpoint> e)
    : table(std::move(t)), endpoint(std::move(e)) {}
  endpoint_call(const endpoint_call&) = delete;
  endpoint_call& operator=(const endpoint_call&) = delete;
  ~endpoint_call() {
    if (!reported)
      endpoint->in_flight.fetch_sub(1, std::memory_order_relaxed);
  }
  void end(endpoint_result result, answer_verdict& verdict) {
    reported = true;
    table->report(*endpoint, result);
    verdict.endpoint = endpoint->text;
  }
};

/// What an HTTP call's end says of its machine (§17's failures: a connection failure or reset, a
/// timeout, 502, 503, 504).
endpoint_result machine_result(const transfer_result& r, const answer_verdict& v) {
  if (r.error == transfer_error::connect || r.error == transfer_error::timeout ||
      (r.error == transfer_error::none && r.http_status >= 502 && r.http_status <= 504))
    return endpoint_result::failure;
  return v.status == section_status::ok ? endpoint_result::ok : endpoint_result::other;
}

/// A gRPC call's: UNAVAILABLE (a connection failure, a reset, a refusal) or its timeout.
endpoint_result machine_result(const answer_verdict& v) {
  if (v.grpc_code == 14 || v.status == section_status::timeout)
    return endpoint_result::failure;
  return v.status == section_status::ok ? endpoint_result::ok : endpoint_result::other;
}

} // namespace

grpc::conversion grpc_data_of(const std::vector<std::string>& messages, const grpc_call_part& call,
                              const std::vector<field_path>& fields, std::size_t max_items) {
  grpc::conversion out;
  const grpc::message_types types{*call.catalog->resolver, *call.catalog->factory, call.catalog->orders.get()};
  const auto& output = *call.plan->method->output_type();
  const bool stream = call.plan->server_streaming();
  if (!stream && messages.size() != 1) { // the reader never lets this by
    out.error = "grpc answer: a unary method answered OK with " + std::to_string(messages.size()) + " messages";
    return out;
  }
  if (fields.empty()) { // written as text from each message, the first max_items of a stream
    if (stream)
      out.text += '[';
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (max_items != 0 && i >= max_items) { // parsed still: a stream's every message must be one
        auto skipped = grpc::decode_message_value(types, output, messages[i]);
        if (!skipped.ok)
          return grpc::conversion{false, {}, "grpc answer: " + skipped.error};
        continue;
      }
      if (i > 0)
        out.text += ',';
      std::string error;
      if (!grpc::decode_message_text(types, output, messages[i], out.text, error))
        return grpc::conversion{false, {}, "grpc answer: " + error};
    }
    if (stream)
      out.text += ']';
    out.ok = true;
    return out;
  }
  auto data = nlohmann::json::array();
  for (const auto& bytes : messages) {
    auto json = grpc::decode_message_value(types, output, bytes);
    if (!json.ok) {
      out.error = "grpc answer: " + json.error;
      return out;
    }
    data.push_back(project_fields(json.value, fields));
  }
  if (max_items != 0 && data.size() > max_items)
    data.erase(data.begin() + static_cast<std::ptrdiff_t>(max_items), data.end());
  out.text = grpc::json_text(stream ? data : data.at(0));
  out.ok = true;
  return out;
}

std::vector<std::pair<std::string, std::string>> metadata_of(const std::string& header_lines,
                                                             const std::string& skip) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t at = 0;
  while (at < header_lines.size()) {
    auto end = header_lines.find("\r\n", at);
    if (end == std::string::npos)
      end = header_lines.size();
    const auto line = header_lines.substr(at, end - at);
    at = end + 2;
    const auto colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name.rfind("grpc-", 0) == 0 || is_hop_by_hop(name) || name == skip || name == "accept")
      continue;
    const auto value_at = line.find_first_not_of(' ', colon + 1);
    auto value = value_at == std::string::npos ? std::string{} : line.substr(value_at);
    // gRPC metadata values are printable ASCII: a server refuses the call over anything else.
    if (std::any_of(value.begin(), value.end(), [](unsigned char c) { return c < 0x20 || c > 0x7e; }))
      continue;
    out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

std::uint64_t start_call(downstream_client& client, call_description&& request, verdict_completion&& done) {
  std::shared_ptr<const call_target> target;
  std::shared_ptr<endpoint_call> held;
  if (request.upstream) {
    auto pick = request.upstream->pick(request.avoid.data(), request.avoid.size());
    target = std::move(pick.target);
    if (pick.endpoint) {
      if (request.picked)
        *request.picked = pick.endpoint->id;
      held = std::make_shared<endpoint_call>(std::move(request.upstream), std::move(pick.endpoint));
    }
  }
  if (request.grpc) {
    auto call = std::move(request.grpc);
    grpc_call_request grpc_request;
    grpc_request.target = request.url;
    grpc_request.path = call->path;
    grpc_request.metadata = metadata_of(request.header_lines, request.deadline_header);
    grpc_request.message = call->message;
    grpc_request.timeout = request.timeout;
    grpc_request.grpc_timeout = std::min(request.timeout, request.left);
    grpc_request.max_response_bytes = request.max_response_bytes;
    grpc_request.max_messages = call->max_messages;
    grpc_request.slow_after = request.slow_after;
    grpc_request.slow = std::move(request.slow);
    grpc_request.endpoint = std::move(target);
    return start_grpc_call(client, std::move(grpc_request),
                           [call = std::move(call), fields = std::move(request.fields), max_items = request.max_items,
                            pass = request.write && request.pass_errors, held = std::move(held),
                            done = std::move(done)](grpc::call_result&& result) {
                             auto v = verdict_of(std::move(result), *call, fields, max_items, pass);
                             if (held)
                               held->end(machine_result(v), v);
                             done(std::move(v));
                           });
  }
  transfer_request transfer{std::move(request.url), std::move(request.header_lines), request.timeout,
                            request.max_response_bytes};
  transfer.http2 = request.http2;
  transfer.slow_after = request.slow_after;
  transfer.slow = std::move(request.slow);
  transfer.method = std::move(request.method);
  transfer.body = std::move(request.body);
  transfer.target = std::move(target);
  transfer.origin = std::move(request.origin);
  return client.submit(std::move(transfer),
                       [fields = std::move(request.fields), max_items = request.max_items, write = request.write,
                        pass = request.pass_errors, held = std::move(held), done = std::move(done)](transfer_result&& r) {
                         // (The verdict takes the body over: the machine's result is read first.)
                         const auto error = r.error;
                         const auto status = r.http_status;
                         auto v = write ? classify_write_answer(std::move(r), fields, max_items, pass)
                                        : classify_answer(std::move(r), fields, max_items);
                         if (held) {
                           transfer_result seen;
                           seen.error = error;
                           seen.http_status = status;
                           held->end(machine_result(seen, v), v);
                         }
                         done(std::move(v));
                       });
}

} // namespace gather
