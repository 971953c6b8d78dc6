#include "gather/downstream/grpc/grpc_wire.hpp"

#include <algorithm>
#include <cstring>

#include "gather/config/url_template.hpp"

namespace gather::grpc {

namespace {

constexpr const char* names[] = {
    "OK",           "CANCELLED",         "UNKNOWN",           "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED", "NOT_FOUND",    "ALREADY_EXISTS",    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",   "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL",         "UNAVAILABLE",       "DATA_LOSS",
    "UNAUTHENTICATED"};

constexpr std::size_t prefix_bytes = 5;

} // namespace

const char* code_name(int code) {
  return code >= 0 && code <= unauthenticated ? names[code] : names[unknown];
}

std::string frame(std::string_view message) {
  std::string out(prefix_bytes, '\0');
  const auto length = static_cast<std::uint32_t>(message.size());
  out[1] = static_cast<char>(length >> 24);
  out[2] = static_cast<char>(length >> 16);
  out[3] = static_cast<char>(length >> 8);
  out[4] = static_cast<char>(length);
  out.append(message);
  return out;
}

bool frame_reader::start_message() {
  if (prefix_[0] == 1) {
    error_ = "a compressed message (the gateway asks for none)";
    return false;
  }
  if (prefix_[0] != 0) {
    error_ = "a message prefix with flag " + std::to_string(prefix_[0]) + " (only 0 or 1 exist)";
    return false;
  }
  length_ = (std::size_t{prefix_[1]} << 24) | (std::size_t{prefix_[2]} << 16) |
            (std::size_t{prefix_[3]} << 8) | std::size_t{prefix_[4]};
  if (length_ > max_message_ || total_ + length_ > max_total_) {
    error_ = "a message of " + std::to_string(length_) + " bytes passes max_response_bytes (" +
             std::to_string(length_ > max_message_ ? max_message_ : max_total_ - total_) +
             " left)";
    return false;
  }
  total_ += length_;
  body_.clear();
  body_.reserve(length_);
  reading_body_ = true;
  have_ = 0;
  return true;
}

bool frame_reader::feed(std::string_view chunk, std::vector<std::string>& messages) {
  if (!error_.empty())
    return false;
  while (!chunk.empty() || (reading_body_ && body_.size() == length_)) {
    if (!reading_body_) {
      const std::size_t take = std::min(prefix_bytes - have_, chunk.size());
      std::memcpy(prefix_ + have_, chunk.data(), take);
      have_ += take;
      chunk.remove_prefix(take);
      if (have_ < prefix_bytes)
        return true;
      if (!start_message())
        return false;
    }
    const std::size_t take = std::min(length_ - body_.size(), chunk.size());
    body_.append(chunk.data(), take);
    chunk.remove_prefix(take);
    if (body_.size() == length_) {
      messages.push_back(std::move(body_));
      body_ = std::string{};
      reading_body_ = false;
    }
  }
  return true;
}

std::string timeout_text(millis timeout) {
  constexpr long long max_digits = 99999999;
  long long value = std::max<long long>(1, timeout.count());
  if (value <= max_digits)
    return std::to_string(value) + "m";
  value = (value + 999) / 1000;
  if (value <= max_digits)
    return std::to_string(value) + "S";
  value = (value + 59) / 60;
  if (value <= max_digits)
    return std::to_string(value) + "M";
  return std::to_string(std::min(max_digits, (value + 59) / 60)) + "H";
}

std::optional<int> parse_status(std::string_view text) {
  if (text.empty() || text.size() > 9)
    return std::nullopt;
  int value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::string decode_message(std::string_view text) {
  return percent_decode(text); // grpc-message is percent-encoded UTF-8; a malformed escape stays
}

int code_of_http_status(int http_status) {
  switch (http_status) {
  case 400: return internal;
  case 401: return unauthenticated;
  case 403: return permission_denied;
  case 404: return unimplemented;
  case 429:
  case 502:
  case 503:
  case 504: return unavailable;
  case 431: return internal;
  default: return unknown;
  }
}

section_status status_of(int code) {
  if (code == ok)
    return section_status::ok;
  return code == deadline_exceeded ? section_status::timeout : section_status::error;
}

bool retryable(int code) {
  return code == unavailable || code == resource_exhausted || code == deadline_exceeded;
}

required_failure required_failure_of(section_status status, int code) {
  if (code == not_found && status == section_status::error)
    return {404, "not_found"};
  if (status == section_status::timeout || code == deadline_exceeded)
    return {504, "upstream_timeout"};
  return {503, "upstream_unavailable"};
}

} // namespace gather::grpc
