#include "gather/downstream/call_face.hpp"

#include <algorithm>

#include "gather/downstream/grpc_call.hpp"
#include "gather/downstream/header_names.hpp"
#include "gather/downstream/grpc_json.hpp"
#include "gather/downstream/proto_catalog.hpp"

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

} // namespace

grpc::conversion grpc_data_of(const std::vector<std::string>& messages, const grpc_call_part& call,
                              const std::vector<field_path>& fields, std::size_t max_items) {
  grpc::conversion out;
  const grpc::message_types types{*call.catalog->resolver, *call.catalog->factory};
  const auto& output = *call.plan->method->output_type();
  auto data = nlohmann::json::array();
  for (const auto& bytes : messages) {
    auto json = grpc::decode_message_value(types, output, bytes);
    if (!json.ok) {
      out.error = "grpc answer: " + json.error;
      return out;
    }
    data.push_back(fields.empty() ? std::move(json.value) : project_fields(json.value, fields));
  }
  if (!call.plan->server_streaming() && data.size() != 1) { // the reader never lets this by
    out.error = "grpc answer: a unary method answered OK with " + std::to_string(data.size()) + " messages";
    return out;
  }
  if (max_items != 0 && data.size() > max_items)
    data.erase(data.begin() + static_cast<std::ptrdiff_t>(max_items), data.end());
  out.text = (call.plan->server_streaming() ? data : data.at(0)).dump();
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

std::uint64_t start_section_call(downstream_client& client, section_call_request request,
                                 verdict_completion done) {
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
    return start_grpc_call(client, std::move(grpc_request),
                           [call = std::move(call), fields = std::move(request.fields), max_items = request.max_items,
                            pass = request.write && request.pass_errors,
                            done = std::move(done)](grpc::call_result&& result) {
                             done(verdict_of(std::move(result), *call, fields, max_items, pass));
                           });
  }
  transfer_request transfer{std::move(request.url), std::move(request.header_lines), request.timeout,
                            request.max_response_bytes};
  transfer.http2 = request.http2;
  transfer.slow_after = request.slow_after;
  transfer.slow = std::move(request.slow);
  transfer.method = std::move(request.method);
  transfer.body = std::move(request.body);
  if (request.write)
    return client.submit(std::move(transfer),
                         [fields = std::move(request.fields), max_items = request.max_items,
                          pass = request.pass_errors, done = std::move(done)](transfer_result&& r) {
                           done(classify_write_answer(std::move(r), fields, max_items, pass));
                         });
  return client.submit(std::move(transfer),
                       [fields = std::move(request.fields), max_items = request.max_items,
                        done = std::move(done)](transfer_result&& r) {
                         done(classify_answer(std::move(r), fields, max_items));
                       });
}

} // namespace gather
