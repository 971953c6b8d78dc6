// One health probe (health_probe.hpp) and grpc.health.v1's two small messages.
#include "gather/downstream/upstream/health_probe.hpp"

#include "gather/downstream/grpc/grpc_call.hpp"
#include "gather/downstream/grpc/grpc_wire.hpp"

namespace gather {

namespace {

constexpr const char* health_check_path = "/grpc.health.v1.Health/Check";
constexpr int serving = 1;

const char* serving_status_name(int status) {
  switch (status) {
  case 0: return "UNKNOWN";
  case 1: return "SERVING";
  case 2: return "NOT_SERVING";
  case 3: return "SERVICE_UNKNOWN";
  default: return "a status that names nothing";
  }
}

/// A protobuf varint at `at`; false past the end or over 10 bytes.
bool read_varint(const std::string& bytes, std::size_t& at, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (at >= bytes.size())
      return false;
    auto byte = static_cast<unsigned char>(bytes[at++]);
    value |= std::uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

void write_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

probe_outcome of_transfer(const transfer_result& r) {
  switch (r.error) {
  case transfer_error::none:
    if (r.http_status >= 200 && r.http_status < 300)
      return {probe_result::healthy, "HTTP " + std::to_string(r.http_status)};
    return {probe_result::unhealthy, "HTTP " + std::to_string(r.http_status)};
  case transfer_error::timeout: return {probe_result::timeout, r.detail};
  case transfer_error::connect:
  case transfer_error::too_large:
  case transfer_error::protocol: break;
  }
  return {probe_result::unhealthy, r.detail};
}

probe_outcome of_call(const grpc::call_result& r) {
  if (r.code == grpc::deadline_exceeded)
    return {probe_result::timeout, r.detail.empty() ? "DEADLINE_EXCEEDED" : r.detail};
  if (r.code != grpc::ok) {
    std::string why = grpc::code_name(r.code);
    if (!r.message.empty())
      why += ": " + r.message;
    else if (!r.detail.empty())
      why += ": " + r.detail;
    return {probe_result::unhealthy, why};
  }
  int status = r.messages.empty() ? -1 : health_check_status(r.messages.front());
  if (status < 0)
    return {probe_result::unhealthy, "an answer that is no HealthCheckResponse"};
  return {status == serving ? probe_result::healthy : probe_result::unhealthy, serving_status_name(status)};
}

} // namespace

const char* probe_result_name(probe_result result) {
  switch (result) {
  case probe_result::healthy: return "healthy";
  case probe_result::unhealthy: return "unhealthy";
  case probe_result::timeout: return "timeout";
  }
  return "unhealthy";
}

std::string health_check_request(const std::string& service) {
  std::string message;
  if (service.empty())
    return message; // proto3: an empty string is not written
  message.push_back(0x0a); // field 1, length-delimited
  write_varint(message, service.size());
  message += service;
  return message;
}

int health_check_status(const std::string& response) {
  int status = 0; // proto3: absent is the default, UNKNOWN
  std::size_t at = 0;
  while (at < response.size()) {
    std::uint64_t tag = 0, value = 0;
    if (!read_varint(response, at, tag))
      return -1;
    switch (tag & 7) {
    case 0: // varint
      if (!read_varint(response, at, value))
        return -1;
      if ((tag >> 3) == 1)
        status = static_cast<int>(value & 0x7fffffff);
      break;
    case 1: at += 8; break;
    case 5: at += 4; break;
    case 2:
      if (!read_varint(response, at, value) || value > response.size() - at)
        return -1;
      at += value;
      break;
    default: return -1;
    }
    if (at > response.size() || (tag >> 3) == 0)
      return -1;
  }
  return status;
}

std::uint64_t probe_endpoint(downstream_client& client, const std::string& origin,
                             const health_probe_spec& spec, std::function<void(probe_outcome)> done,
                             std::shared_ptr<const call_target> target) {
  if (spec.what == health_probe_spec::kind::path) {
    transfer_request request;
    request.url = origin + (spec.path.empty() || spec.path.front() != '/' ? "/" : "") + spec.path;
    request.header_lines = "User-Agent: gather-health-check/" GATHER_VERSION "\r\n";
    request.timeout = spec.timeout;
    request.max_body_bytes = spec.max_response_bytes;
    request.target = std::move(target);
    return client.submit(std::move(request),
                         [done = std::move(done)](transfer_result&& r) { done(of_transfer(r)); });
  }
  grpc_call_request request;
  request.target = origin;
  request.path = health_check_path;
  request.message = health_check_request(spec.grpc_service);
  request.timeout = spec.timeout;
  request.grpc_timeout = spec.timeout;
  request.max_response_bytes = spec.max_response_bytes;
  request.endpoint = std::move(target);
  return start_grpc_call(client, std::move(request),
                         [done = std::move(done)](grpc::call_result&& r) { done(of_call(r)); });
}

health_streak::health_streak(unsigned unhealthy, unsigned healthy)
    : unhealthy_(unhealthy == 0 ? 1 : unhealthy), healthy_(healthy == 0 ? 1 : healthy) {}

health_streak::change health_streak::record(probe_result result) {
  if (result == probe_result::healthy) {
    failed_ = 0;
    ++good_;
    if (!in_rotation_ && good_ >= healthy_) {
      in_rotation_ = true;
      return change::into_rotation;
    }
    return change::none;
  }
  good_ = 0;
  ++failed_;
  if (in_rotation_ && failed_ >= unhealthy_) {
    in_rotation_ = false;
    return change::out_of_rotation;
  }
  return change::none;
}

} // namespace gather
