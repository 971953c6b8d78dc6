#include "gather/downstream/grpc/grpc_answer.hpp"

#include "gather/values/h2_codes.hpp"

namespace gather::grpc {

namespace {

const std::string* find_field(const fields& headers, std::string_view name) {
  for (const auto& [key, value] : headers)
    if (key == name)
      return &value;
  return nullptr;
}

/// application/grpc, application/grpc+proto, application/grpc;charset=...: gRPC. Anything else
/// (an HTML error page, JSON) is not.
bool is_grpc_type(const std::string* type) {
  static constexpr std::string_view grpc_type = "application/grpc";
  if (!type || type->compare(0, grpc_type.size(), grpc_type) != 0)
    return false;
  return type->size() == grpc_type.size() || (*type)[grpc_type.size()] == '+' ||
         (*type)[grpc_type.size()] == ';';
}

} // namespace

int code_of_reset(std::uint32_t h2_error_code) {
  switch (h2_error_code) {
  case h2_code::cancel: return cancelled;
  case h2_code::refused_stream: return unavailable;
  case h2_code::enhance_your_calm: return resource_exhausted;
  case h2_code::inadequate_security: return permission_denied;
  default: return internal;
  }
}

void answer_reader::fail(int code, std::string detail) {
  if (failed_)
    return;
  failed_ = true;
  result_.code = code;
  result_.detail = std::move(detail);
}

void answer_reader::read_status(const fields& headers) {
  if (const auto* message = find_field(headers, "grpc-message"))
    result_.message = decode_message(*message);
  const auto* status = find_field(headers, "grpc-status");
  if (!status)
    return;
  status_seen_ = true;
  if (const auto code = parse_status(*status)) {
    result_.code = *code;
  } else {
    result_.code = unknown;
    result_.detail = "grpc-status \"" + *status + "\" is not a number";
  }
}

bool answer_reader::on_head(int status, const fields& headers, bool ends_stream) {
  result_.http_status = status;
  if (status != 200) {
    fail(code_of_http_status(status), "HTTP status " + std::to_string(status) + ": not a gRPC answer");
    return false;
  }
  const auto* type = find_field(headers, "content-type");
  if (!is_grpc_type(type)) {
    fail(unknown, "content-type " + (type ? "\"" + *type + "\"" : std::string("absent")) +
                      ": not a gRPC answer");
    return false;
  }
  if (ends_stream)
    read_status(headers); // Trailers-Only
  return true;
}

bool answer_reader::on_data(std::string_view chunk) {
  if (failed_ || result_.cut)
    return false;
  if (!frames_.feed(chunk, result_.messages)) {
    fail(internal, frames_.error());
    return false;
  }
  if (max_messages_ == 0 && result_.messages.size() > 1) {
    fail(internal, "a unary method answered more than one message");
    return false;
  }
  if (max_messages_ > 0 && result_.messages.size() >= max_messages_) {
    result_.messages.resize(max_messages_);
    result_.cut = true;
    return false;
  }
  return true;
}

void answer_reader::on_trailers(const fields& trailers) {
  if (!failed_)
    read_status(trailers);
}

call_result answer_reader::finish(stream_end_kind how, std::uint32_t reset_code, std::string detail) {
  if (result_.cut) {
    result_.code = ok;
    return std::move(result_);
  }
  if (!failed_) {
    switch (how) {
    case stream_end_kind::complete:
      if (!status_seen_)
        fail(unknown, "the answer ended without grpc-status");
      else if (frames_.inside_message())
        fail(internal, "the stream ended inside a message");
      else if (result_.code == ok && max_messages_ == 0 && result_.messages.size() != 1)
        fail(internal, "a unary method answered OK without a message");
      break;
    case stream_end_kind::stopped:
      fail(internal, "the call was stopped");
      break;
    case stream_end_kind::timeout:
      fail(deadline_exceeded, "the call's timeout passed");
      break;
    case stream_end_kind::unavailable:
      fail(unavailable, "no connection");
      break;
    case stream_end_kind::reset:
      if (!status_seen_)
        fail(code_of_reset(reset_code), "the server reset the stream (HTTP/2 error " +
                                            std::to_string(reset_code) + ")");
      break;
    case stream_end_kind::too_large:
      fail(internal, "the answer passed max_response_bytes");
      break;
    case stream_end_kind::protocol:
      fail(internal, "a malformed HTTP/2 answer");
      break;
    }
  }
  if (!detail.empty() && detail != result_.detail) // the client's own words, when they add any
    result_.detail += (result_.detail.empty() ? "" : ": ") + detail;
  if (result_.code != ok)
    result_.messages.clear(); // a partial list is never shown as a whole
  return std::move(result_);
}

} // namespace gather::grpc
