// Reading the `tracing` object: where spans go, under which service name, how many are sampled,
// and the export's bounds (queue, batch, interval, timeout).

#include "config_reader.hpp"

namespace gather::config_reader {

namespace {

void read_endpoint(const object_reader& tracing, std::string& out) {
  const std::string expected = "an http:// or https:// URL (an OTLP/HTTP traces endpoint)";
  if (!tracing.require("otlp_endpoint", expected))
    return;
  const auto url = tracing.read_string("otlp_endpoint", expected);
  if (!url)
    return;
  const auto errors = url_prefix_problems(*url);
  if (errors.empty())
    out = *url;
  for (const auto& error : errors)
    tracing.problem("otlp_endpoint", error);
}

void read_service_name(const object_reader& tracing, std::string& out) {
  const std::string expected = "a non-empty string of at most 256 characters";
  const auto name = tracing.read_string("service_name", expected);
  if (!name)
    return;
  if (name->empty() || name->size() > 256)
    tracing.problem("service_name", "must be " + expected);
  else
    out = *name;
}

} // namespace

std::optional<tracing_config> read_tracing(const object_reader& top) {
  std::optional<tracing_config> out;
  if (const auto tracing = top.read_object("tracing")) {
    tracing->reject_unknown_keys({"otlp_endpoint", "service_name", "sample_ratio",
                                  "max_queue_spans", "max_batch_spans", "export_interval_ms",
                                  "export_timeout_ms"});
    out.emplace();
    read_endpoint(*tracing, out->otlp_endpoint);
    read_service_name(*tracing, out->service_name);
    tracing->read_number("sample_ratio", 0, 1, out->sample_ratio);
    tracing->read_integer("max_queue_spans", 1, 10000000, out->max_queue_spans);
    tracing->read_integer("max_batch_spans", 1, 100000, out->max_batch_spans);
    // At most 2 s: docs/operations.md promises an export at least every 2 s.
    tracing->read_millis("export_interval_ms", 1, 2000, out->export_interval);
    tracing->read_millis("export_timeout_ms", 1, max_timeout_ms, out->export_timeout);
  }
  return out;
}

} // namespace gather::config_reader
