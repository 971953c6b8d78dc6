#include "gather/cluster/cluster_transport.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/session.hpp>
#include <nlohmann/json.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "gather/ops/request_log.hpp"

namespace gather {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
namespace net = caf::io::network;

/// OpenSSL's queued errors on this thread, oldest first ("" when none).
std::string openssl_errors() {
  std::string text;
  while (const auto code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    text += (text.empty() ? "" : "; ") + std::string{buffer};
  }
  return text;
}

std::string peer_of(int fd) {
  const auto addr = net::remote_addr_of_fd(fd);
  const auto port = net::remote_port_of_fd(fd);
  return (addr ? *addr : std::string{"?"}) + ":" + (port ? std::to_string(*port) : std::string{"?"});
}

/// CAF's TLS session, watched: a failure before the peer's first byte arrived is a failed
/// handshake, and its reason (OpenSSL's error queue, which CAF leaves untouched with its logging
/// compiled out) is reported once.
class watched_tls {
public:
  using report = std::function<void(const std::string&)>;
  watched_tls(caf::openssl::session_ptr session, report on_refused)
    : session_(std::move(session)), on_refused_(std::move(on_refused)) {}

  net::rw_state read_some(std::size_t& result, net::native_socket fd, void* buf, std::size_t len) {
    ERR_clear_error();
    return watch(session_->read_some(result, fd, buf, len), result);
  }
  net::rw_state write_some(std::size_t& result, net::native_socket fd, const void* buf, std::size_t len) {
    ERR_clear_error();
    return watch(session_->write_some(result, fd, buf, len), 0);
  }
  bool must_read_more(net::native_socket fd, std::size_t threshold) {
    return session_->must_read_more(fd, threshold);
  }

private:
  net::rw_state watch(net::rw_state state, std::size_t read) {
    if (read > 0)
      established_ = true;
    if (state == net::rw_state::failure && !established_ && on_refused_) {
      auto why = openssl_errors();
      on_refused_(why.empty() ? "the connection closed before the TLS handshake finished" : why);
      on_refused_ = nullptr;
    }
    return state;
  }

  caf::openssl::session_ptr session_;
  report on_refused_;
  bool established_ = false;
};

/// A BASP connection over a watched TLS session (the scribe interface over CAF's stream).
class tls_scribe final : public caf::io::scribe {
public:
  tls_scribe(net::default_multiplexer& mpx, net::native_socket fd, caf::openssl::session_ptr session,
             watched_tls::report on_refused)
    : caf::io::scribe(net::conn_hdl_from_socket(fd)),
      stream_(mpx, fd, std::move(session), std::move(on_refused)) {}

  void configure_read(caf::io::receive_policy::config config) override {
    stream_.configure_read(config);
    if (!launched_)
      launch();
  }
  void ack_writes(bool enable) override { stream_.ack_writes(enable); }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }
  void flush() override { stream_.flush(this); }
  std::string addr() const override {
    auto x = net::remote_addr_of_fd(stream_.fd());
    return x ? *x : std::string{};
  }
  std::uint16_t port() const override {
    auto x = net::remote_port_of_fd(stream_.fd());
    return x ? *x : 0;
  }
  void launch() {
    launched_ = true;
    stream_.start(this);
    // The handshake may still need to write (SSL_connect / SSL_accept): an empty write runs it.
    stream_.force_empty_write(this);
  }
  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override { stream_.passivate(); }

private:
  bool launched_ = false;
  net::stream_impl<watched_tls> stream_;
};

void log_refused(const std::string& peer, const std::string& why) {
  nlohmann::json line = {{"event", "cluster_peer_refused"}, {"peer", peer},
                         {"detail", "TLS handshake failed: " + why}};
  write_log_line(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

/// The node's TLS listener: each accepted socket becomes a watched server-side session.
class tls_doorman final : public net::doorman_impl {
public:
  tls_doorman(net::default_multiplexer& mpx, net::native_socket fd) : net::doorman_impl(mpx, fd) {}

  bool new_connection() override {
    if (detached())
      return false;
    auto& mpx = acceptor_.backend();
    const auto fd = acceptor_.accepted_socket();
    net::nonblocking(fd, true);
    const auto peer = peer_of(fd);
    ERR_clear_error();
    auto session = caf::openssl::make_session(parent()->system(), fd, true);
    if (!session) {
      const auto why = openssl_errors();
      log_refused(peer, why.empty() ? "the session could not start" : why);
      ::close(fd);
      return false;
    }
    auto scribe = caf::make_counted<tls_scribe>(mpx, fd, std::move(session),
                                               [peer](const std::string& why) { log_refused(peer, why); });
    const auto hdl = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mpx, hdl);
  }
};

net::default_multiplexer& multiplexer_of(caf::actor_system& system) {
  return static_cast<net::default_multiplexer&>(system.middleman().backend());
}

/// One dial in progress: its socket, its timer, and the one completion it owes.
struct dial_state {
  tcp::socket socket;
  tcp::resolver resolver;
  asio::steady_timer timer;
  std::function<void(std::shared_ptr<owned_socket>, std::string)> done;
  explicit dial_state(asio::io_context& loop) : socket(loop), resolver(loop), timer(loop) {}

  void finish(std::shared_ptr<owned_socket> s, std::string why) {
    if (!done)
      return;
    timer.cancel();
    auto call = std::move(done);
    done = nullptr;
    call(std::move(s), std::move(why));
  }
};

void connect_to(const std::shared_ptr<dial_state>& d, tcp::endpoint endpoint) {
  d->socket.async_connect(endpoint, [d](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted && !d->done)
      return;
    if (ec)
      return d->finish(nullptr, "cannot connect: " + ec.message());
    boost::system::error_code ignored;
    d->socket.set_option(tcp::no_delay(true), ignored);
    d->finish(std::make_shared<owned_socket>(d->socket.release()), {});
  });
}

} // namespace

owned_socket::~owned_socket() {
  if (fd >= 0)
    ::close(fd);
}

void handshake_note::set(std::string why) {
  std::lock_guard<std::mutex> guard{mutex_};
  why_ = std::move(why);
}

std::string handshake_note::get() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return why_;
}

void enable_cluster_tls(caf::actor_system_config& cfg, const cluster_tls_config& tls) {
  cfg.load<caf::openssl::manager>();
  cfg.openssl_certificate = tls.cert_file;
  cfg.openssl_key = tls.key_file;
  cfg.openssl_cafile = tls.ca_file;
}

std::vector<std::string> cluster_tls_problems(const cluster_tls_config& tls, const tls_file_labels& labels) {
  std::vector<std::string> problems;
  for (auto [label, file] : {std::pair{&labels.cert, &tls.cert_file}, {&labels.key, &tls.key_file},
                             {&labels.ca, &tls.ca_file}}) {
    if (std::FILE* f = std::fopen(file->c_str(), "rb"))
      std::fclose(f);
    else
      problems.push_back(*label + ": cannot read " + *file + ": " + std::strerror(errno));
  }
  if (!problems.empty())
    return problems;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{SSL_CTX_new(TLS_method()), &SSL_CTX_free};
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.cert_file.c_str()) != 1)
    problems.push_back(labels.cert + ": " + tls.cert_file + " is not a PEM certificate chain");
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    problems.push_back(labels.key + ": " + tls.key_file + " is not a PEM private key, or does not belong to " +
                       labels.cert);
  else if (problems.empty() && SSL_CTX_check_private_key(ctx.get()) != 1)
    problems.push_back(labels.key + ": does not belong to the certificate in " + labels.cert);
  if (SSL_CTX_load_verify_locations(ctx.get(), tls.ca_file.c_str(), nullptr) != 1)
    problems.push_back(labels.ca + ": " + tls.ca_file + " holds no PEM CA certificate");
  ERR_clear_error();
  return problems;
}

void dial(asio::io_context& loop, const std::string& host, std::uint16_t port, millis timeout,
          std::function<void(std::shared_ptr<owned_socket>, std::string)> done) {
  auto d = std::make_shared<dial_state>(loop);
  d->done = std::move(done);
  d->timer.expires_after(timeout);
  d->timer.async_wait([d, timeout](const boost::system::error_code& ec) {
    if (ec || !d->done)
      return;
    boost::system::error_code ignored;
    d->resolver.cancel();
    d->socket.close(ignored);
    d->finish(nullptr, "cannot connect: no answer within " + std::to_string(timeout.count()) + " ms");
  });
  boost::system::error_code not_ip;
  const auto address = asio::ip::make_address(host, not_ip);
  if (!not_ip)
    return asio::post(loop, [d, endpoint = tcp::endpoint{address, port}] { connect_to(d, endpoint); });
  d->resolver.async_resolve(host, std::to_string(port),
                            [d](const boost::system::error_code& ec, tcp::resolver::results_type found) {
                              if (!d->done)
                                return;
                              if (ec || found.empty())
                                return d->finish(nullptr, "cannot resolve: " + ec.message());
                              connect_to(d, found.begin()->endpoint());
                            });
}

caf::io::scribe_ptr link_scribe(caf::actor_system& system, int fd, bool tls,
                                std::shared_ptr<handshake_note> note) {
  auto& mpx = multiplexer_of(system);
  net::nonblocking(fd, true);
  if (!tls)
    return mpx.new_scribe(fd);
  ERR_clear_error();
  auto session = caf::openssl::make_session(system, fd, false);
  if (!session) {
    note->set(openssl_errors());
    ::close(fd);
    return nullptr;
  }
  return caf::make_counted<tls_scribe>(mpx, fd, std::move(session),
                                      [note](const std::string& why) { note->set(why); });
}

caf::actor basp_broker_of(caf::actor_system& system) {
  return system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
}

caf::expected<std::uint16_t> publish_tls(caf::actor_system& system, const caf::actor& whom,
                                         std::uint16_t port, const std::string& host) {
  auto fd = net::new_tcp_acceptor_impl(port, host.empty() ? nullptr : host.c_str(), true);
  if (!fd)
    return std::move(fd.error());
  auto doorman = caf::make_counted<tls_doorman>(multiplexer_of(system), *fd);
  const auto bound = doorman->port();
  caf::anon_send(basp_broker_of(system), caf::publish_atom::value, caf::io::doorman_ptr{std::move(doorman)},
                 bound, caf::actor_cast<caf::strong_actor_ptr>(whom), std::set<std::string>{});
  return bound;
}

} // namespace gather
