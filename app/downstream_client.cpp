// libcurl multi client on one I/O thread. Other threads only touch `queue` (under `mutex`) and
// wake the loop with curl_multi_wakeup(); everything else belongs to the I/O thread, so the
// running transfers, the easy-handle free list and the multi handle need no lock.
#include "gather/downstream_client.hpp"

#include <algorithm>
#include <csignal>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>

#include <curl/curl.h>

namespace gather {

namespace {

// Idle connections kept for reuse; far above the number of downstreams we talk to at once.
constexpr long max_cached_connections = 1024;
// Idle easy handles kept for reuse; beyond this, finished handles are freed.
constexpr std::size_t max_idle_handles = 1024;
// Upper bound of one wait: the loop wakes earlier for curl's timers, socket events or a wakeup.
constexpr int max_poll_wait_ms = 1000;

// curl_global_init is not thread-safe and must precede every other libcurl call; a function-local
// static runs it once. With CURLOPT_NOSIGNAL a write to a peer-closed socket raises SIGPIPE in the
// process instead of inside curl, so it is ignored process-wide here too.
void init_process_once() {
  static const bool initialised = [] {
    std::signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw std::runtime_error("curl_global_init failed");
    return true;
  }();
  (void)initialised;
}

transfer_error classify(CURLcode code, bool body_cap_hit) {
  switch (code) {
  case CURLE_OK:
    return transfer_error::none;
  case CURLE_OPERATION_TIMEDOUT:
    return transfer_error::timeout;
  case CURLE_FILESIZE_EXCEEDED: // Content-Length announced more than the cap
    return transfer_error::too_large;
  case CURLE_WRITE_ERROR: // our write callback refused data
    return body_cap_hit ? transfer_error::too_large : transfer_error::protocol;
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_CONNECT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:  // connection closed before any response byte
  case CURLE_PARTIAL_FILE: // connection closed mid-body: the peer went away, not a bad reply
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
    return transfer_error::connect;
  default:
    return transfer_error::protocol;
  }
}

} // namespace

struct downstream_client::impl {
  struct submission {
    std::uint64_t id;
    transfer_request request;
    completion done;
  };

  // One running transfer; CURLOPT_PRIVATE points here.
  struct transfer {
    std::uint64_t id = 0;
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    std::size_t max_body_bytes = 0;
    bool body_cap_hit = false;
    std::string body;
    char error_text[CURL_ERROR_SIZE] = {};
    completion done;
  };

  CURLM* multi = nullptr;
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::size_t> inflight{0};

  // Shared with submitting threads.
  mutable std::mutex mutex;
  std::vector<submission> submissions;
  std::vector<std::uint64_t> cancellations;
  bool stopping = false;

  // I/O thread only.
  std::unordered_map<std::uint64_t, std::unique_ptr<transfer>> running;
  std::vector<CURL*> idle_handles;

  std::thread io_thread; // last: starts once everything above exists

  impl() {
    init_process_once();
    multi = curl_multi_init();
    if (!multi) throw std::runtime_error("curl_multi_init failed");
    // Keep-alive connections survive in the multi handle's cache; the default (4 x handles)
    // would close idle connections to downstreams we will call again a moment later.
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, max_cached_connections);
    io_thread = std::thread([this] { run(); });
  }

  ~impl() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    curl_multi_wakeup(multi);
    io_thread.join();
    for (CURL* easy : idle_handles) curl_easy_cleanup(easy);
    curl_multi_cleanup(multi); // closes the cached connections
  }

  void run() {
    while (take_queued()) {
      int still_running = 0;
      curl_multi_perform(multi, &still_running);
      complete_finished();
      curl_multi_poll(multi, nullptr, 0, max_poll_wait_ms, nullptr);
    }
    abandon_all();
  }

  // Starts queued submissions, then applies queued cancellations (which may name a transfer
  // started a moment ago). Returns false once the client is being destroyed.
  bool take_queued() {
    std::vector<submission> new_submissions;
    std::vector<std::uint64_t> new_cancellations;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping) return false;
      new_submissions.swap(submissions);
      new_cancellations.swap(cancellations);
    }
    for (submission& s : new_submissions) start(std::move(s));
    for (std::uint64_t id : new_cancellations) abandon(id);
    return true;
  }

  CURL* take_easy_handle() {
    if (idle_handles.empty()) return curl_easy_init();
    CURL* easy = idle_handles.back();
    idle_handles.pop_back();
    return easy;
  }

  void recycle(transfer& t) {
    curl_multi_remove_handle(multi, t.easy); // closes the connection if the transfer is unfinished
    curl_slist_free_all(t.headers);
    if (idle_handles.size() < max_idle_handles) {
      curl_easy_reset(t.easy); // drops every option; the connection cache is the multi handle's
      idle_handles.push_back(t.easy);
    } else {
      curl_easy_cleanup(t.easy);
    }
  }

  static size_t on_body(char* data, size_t size, size_t count, void* user) {
    auto& t = *static_cast<transfer*>(user);
    const size_t n = size * count;
    if (t.body.size() + n > t.max_body_bytes) {
      t.body_cap_hit = true;
      return 0; // a short count makes curl abort with CURLE_WRITE_ERROR
    }
    t.body.append(data, n);
    return n;
  }

  void configure(transfer& t, const transfer_request& request) {
    CURL* e = t.easy;
    // At least 1 ms: to curl a timeout of 0 means "wait forever".
    const long timeout_ms = std::max<long>(1, static_cast<long>(request.timeout.count()));
    curl_easy_setopt(e, CURLOPT_URL, request.url.c_str());
    for (const std::string& line : request.headers)
      t.headers = curl_slist_append(t.headers, line.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
    // Timers instead of SIGALRM: signals cannot target one transfer among thousands on a thread.
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    // A whole-transfer deadline, so a trickling body cannot stretch a call past it.
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    // A 3xx is the downstream's answer: following it could leave the configured host.
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    // The URL was rendered with care (encoded dot segments); curl must not rewrite it.
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    // Downstream addresses come from the config alone, never from an inherited http_proxy.
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    // Refuses an announced oversize body before reading it; on_body catches the unannounced.
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(request.max_body_bytes));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &impl::on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error_text);
    curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
  }

  void start(submission s) {
    auto t = std::make_unique<transfer>();
    t->id = s.id;
    t->max_body_bytes = s.request.max_body_bytes;
    t->done = std::move(s.done);
    t->easy = take_easy_handle();
    if (!t->easy) return fail_to_start(*t, "curl_easy_init failed");
    configure(*t, s.request);
    const CURLMcode added = curl_multi_add_handle(multi, t->easy);
    if (added != CURLM_OK) {
      recycle(*t);
      return fail_to_start(*t, curl_multi_strerror(added));
    }
    running.emplace(t->id, std::move(t));
  }

  void fail_to_start(transfer& t, const char* why) {
    --inflight;
    transfer_result result;
    result.error = transfer_error::protocol;
    result.detail = why;
    t.done(std::move(result));
  }

  void complete_finished() {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      void* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      complete(*static_cast<transfer*>(t), msg->data.result);
    }
  }

  // Runs the completion with no lock held: it may submit or cancel transfers itself.
  void complete(transfer& t, CURLcode code) {
    transfer_result result;
    result.error = classify(code, t.body_cap_hit);
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &result.http_status);
    if (result.error == transfer_error::none)
      result.body = std::move(t.body);
    else
      result.detail = t.error_text[0] ? t.error_text : curl_easy_strerror(code);
    completion done = std::move(t.done);
    forget(t.id);
    done(std::move(result));
  }

  // Removes a transfer without running its completion; unknown ids were already finished.
  void abandon(std::uint64_t id) {
    if (running.count(id)) forget(id);
  }

  void forget(std::uint64_t id) {
    auto it = running.find(id);
    recycle(*it->second);
    running.erase(it);
    --inflight;
  }

  void abandon_all() {
    while (!running.empty()) forget(running.begin()->first);
    std::lock_guard<std::mutex> lock(mutex);
    inflight -= submissions.size();
    submissions.clear();
  }
};

downstream_client::downstream_client() : impl_(std::make_unique<impl>()) {}

downstream_client::~downstream_client() = default;

std::uint64_t downstream_client::submit(transfer_request request, completion done) {
  const std::uint64_t id = impl_->next_id++;
  ++impl_->inflight;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->submissions.push_back({id, std::move(request), std::move(done)});
  }
  curl_multi_wakeup(impl_->multi);
  return id;
}

void downstream_client::cancel(std::uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->cancellations.push_back(id);
  }
  curl_multi_wakeup(impl_->multi);
}

std::size_t downstream_client::inflight() const { return impl_->inflight.load(); }

std::size_t downstream_client::queued() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->submissions.size() + impl_->cancellations.size();
}

} // namespace gather
