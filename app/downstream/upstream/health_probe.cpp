// One health probe (health_probe.hpp) and grpc.health.v1's two small messages.
#include "gather/downstream/upstream/health_probe.hpp"

#include "gather/downstream/grpc/grpc_call.hpp"
#include "gather/downstream/grpc/grpc_wire.hpp"

#include <google/protobuf/unknown_field_set.h>

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

// grpc.health.v1's two messages are one field each: HealthCheckRequest { string service = 1; },
// HealthCheckResponse { ServingStatus status = 1; }. libprotobuf writes and reads them as unknown
// fields (its own wire format code, with its bounds), so the probe needs no generated classes.
std::string health_check_request(const std::string& service) {
  google::protobuf::UnknownFieldSet message;
  if (!service.empty()) // proto3: an empty string is not written
    message.AddLengthDelimited(1, service);
  std::string bytes;
  message.SerializeToString(&bytes);
  return bytes;
}

int health_check_status(const std::string& response) {
  google::protobuf::UnknownFieldSet message;
  if (!message.ParseFromString(response))
    return -1;
  int status = 0; // proto3: absent is the default, UNKNOWN
  for (int i = 0; i < message.field_count(); ++i) {
    const auto& field = message.field(i);
    if (field.number() != 1)
      continue; // a field a later version added
    if (field.type() != google::protobuf::UnknownField::TYPE_VARINT)
      return -1;
    status = static_cast<int>(field.varint() & 0x7fffffff); // the last one wins, as protobuf's
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
