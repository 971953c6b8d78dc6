// Reading a batch route's `batch` object.

#include "config_reader.hpp"

namespace gather::config_reader {

batch_config read_batch(const object_reader& batch, const route_config& route,
                        bool route_path_valid) {
  batch.reject_unknown_keys({"url", "max_items", "concurrency", "timeout_ms", "retry",
                             "deadline_ms", "fields", "forward_headers", "grpc", "http2"});
  batch_config out;
  const template_scope scope{route_path_valid ? &route : nullptr, nullptr, std::nullopt,
                             route.auth.has_value()};
  const auto has_item = [](const url_template& tpl) {
    return std::any_of(tpl.parts.begin(), tpl.parts.end(),
                       [](const url_part& part) { return part.what == url_part::kind::item; });
  };
  if (batch.find("grpc") && batch.find("url")) {
    batch.problems().add(batch.path(),
                         "has both \"url\" and \"grpc\" (a batch calls one or the other)");
  } else if (batch.find("grpc")) {
    out.grpc = read_grpc(batch, scope);
    if (out.grpc && std::none_of(out.grpc->placeholders.begin(), out.grpc->placeholders.end(),
                                 [&](const message_placeholder& p) { return has_item(p.text); }))
      batch.problem("grpc", "its message must contain {item}");
  } else {
    out.url = read_url(batch, scope);
    if (!out.url.source.empty() && !has_item(out.url))
      batch.problem("url", "must contain {item}");
  }
  batch.read_integer("max_items", 1, 100000, out.max_items);
  batch.read_integer("concurrency", 1, 10000, out.concurrency);
  batch.read_required_millis("timeout_ms", 1, max_timeout_ms, out.timeout);
  out.retry = read_retry(batch);
  batch.read_millis("deadline_ms", 1, 3600000, out.deadline);
  out.fields = read_fields(batch);
  out.forward_headers = read_forward_headers(batch);
  batch.read_bool("http2", out.http2);
  return out;
}

} // namespace gather::config_reader
