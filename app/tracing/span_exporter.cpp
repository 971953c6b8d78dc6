#include "gather/tracing/span_exporter.hpp"

#include <atomic>
#include <iterator>
#include <mutex>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gather/downstream/call/downstream_client.hpp"
#include "gather/tracing/otlp_json.hpp"

namespace gather {

namespace asio = boost::asio;

struct span_exporter::impl {
  tracing_config cfg;
  downstream_client& client;
  asio::io_context& loop;
  std::size_t max_response_bytes;

  mutable std::mutex mutex; ///< guards `queue` only; held for a push or a swap, never for I/O
  std::vector<span_record> queue;

  std::atomic<std::uint64_t> dropped{0}, exported{0}, failed{0};
  std::atomic<bool> flush_posted{false}; ///< a full batch already asked the loop for an export

  // The loop's thread only:
  asio::steady_timer timer;
  bool in_flight = false;

  impl(const tracing_config& c, downstream_client& cl, asio::io_context& l, std::size_t max_reply)
    : cfg(c), client(cl), loop(l), max_response_bytes(max_reply), timer(l) {
    queue.reserve(std::min(cfg.max_queue_spans, cfg.max_batch_spans));
  }

  void arm() {
    timer.expires_after(cfg.export_interval);
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec)
        return;
      export_batch();
      arm();
    });
  }

  std::vector<span_record> take_batch() {
    std::vector<span_record> batch;
    std::lock_guard<std::mutex> guard{mutex};
    if (queue.size() <= cfg.max_batch_spans) {
      batch.swap(queue);
    } else {
      const auto end = queue.begin() + static_cast<std::ptrdiff_t>(cfg.max_batch_spans);
      batch.assign(std::make_move_iterator(queue.begin()), std::make_move_iterator(end));
      queue.erase(queue.begin(), end);
    }
    return batch;
  }

  /// One POST of up to max_batch_spans spans, unless one is in flight (its end starts the next).
  void export_batch() {
    flush_posted.store(false);
    if (in_flight)
      return;
    auto batch = take_batch();
    if (batch.empty())
      return;
    transfer_request request;
    request.url = cfg.otlp_endpoint;
    request.method = "POST";
    request.header_lines = "Content-Type: application/json\r\nAccept: application/json\r\n";
    request.timeout = cfg.export_timeout;
    request.max_body_bytes = max_response_bytes;
    request.body = encode_otlp_json(cfg.service_name, batch);
    in_flight = true;
    const auto spans = batch.size();
    // The completion runs on whichever loop made the transfer: back to this one.
    client.submit(std::move(request), [this, spans](transfer_result&& result) {
      const bool ok = result.error == transfer_error::none && result.http_status >= 200 &&
                      result.http_status < 300;
      asio::post(loop, [this, spans, ok] { exported_batch(spans, ok); });
    });
  }

  void exported_batch(std::size_t spans, bool ok) {
    in_flight = false;
    if (ok)
      exported.fetch_add(spans, std::memory_order_relaxed);
    else
      failed.fetch_add(1, std::memory_order_relaxed);
    bool full;
    {
      std::lock_guard<std::mutex> guard{mutex};
      full = queue.size() >= cfg.max_batch_spans;
    }
    if (full)
      export_batch();
  }
};

span_exporter::span_exporter(const tracing_config& cfg, downstream_client& client,
                             asio::io_context& loop, std::size_t max_response_bytes)
  : impl_(std::make_unique<impl>(cfg, client, loop, max_response_bytes)) {
  asio::post(loop, [im = impl_.get()] { im->arm(); });
}

span_exporter::span_exporter() = default;

span_exporter::~span_exporter() = default;

void span_exporter::record(span_record span) {
  if (!impl_)
    return;
  auto& im = *impl_;
  bool full;
  {
    std::lock_guard<std::mutex> guard{im.mutex};
    if (im.queue.size() >= im.cfg.max_queue_spans) {
      im.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    im.queue.push_back(std::move(span));
    full = im.queue.size() >= im.cfg.max_batch_spans;
  }
  if (full && !im.flush_posted.exchange(true))
    asio::post(im.loop, [p = impl_.get()] { p->export_batch(); });
}

double span_exporter::sample_ratio() const { return impl_ ? impl_->cfg.sample_ratio : 0.0; }

std::uint64_t span_exporter::dropped() const { return impl_ ? impl_->dropped.load() : 0; }

std::uint64_t span_exporter::exported() const { return impl_ ? impl_->exported.load() : 0; }

std::uint64_t span_exporter::failed_exports() const { return impl_ ? impl_->failed.load() : 0; }

std::size_t span_exporter::queued() const {
  if (!impl_)
    return 0;
  std::lock_guard<std::mutex> guard{impl_->mutex};
  return impl_->queue.size();
}

} // namespace gather
