// What one request's actors cost alone, on the gateway's own scheduler (loop_scheduler: the actors
// run on an Asio loop), with no sockets: a coordinator spawns one worker per section, asks it with
// `request(...).then`, the worker "calls" by posting to the loop a completion that comes back as a
// message (as the downstream client's does), answers and quits (until 2026-12-03 it also monitored
// the coordinator and told it of its attempt by message: the last two variants); the coordinator quits once every section answered, and the next request
// starts. CPU time of the loop's thread per request, for each variant (docs/performance.md).
//
//   build/bench/actor_cost [requests] [sections]
#include <caf/all.hpp>

#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <future>
#include <string>

#include "gather/runtime/io_loops.hpp"
#include "gather/runtime/loop_scheduler.hpp"

namespace {

using run_atom = caf::atom_constant<caf::atom("run")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using attempt_atom = caf::atom_constant<caf::atom("attempt")>;

struct variant {
  const char* name;
  bool monitor;  ///< the worker monitors its coordinator (the gateway's did; a node's worker does)
  bool attempt;  ///< the worker tells the coordinator of its attempt by message (the gateway's did)
  bool call;     ///< the worker's "call" is a round trip through the loop (the gateway's is)
};

struct bench_state {
  gather::io_loops* loops = nullptr;
  variant v{};
  std::size_t sections = 1;
  std::size_t left = 0;
  std::promise<void> done;
};

struct worker_state {
  caf::response_promise promise;
};

caf::behavior worker(caf::stateful_actor<worker_state>* self, caf::actor coordinator, bench_state* b) {
  if (b->v.monitor)
    self->monitor(coordinator);
  return {
    [=](run_atom) -> caf::result<std::string> {
      self->state.promise = self->make_response_promise<std::string>();
      if (b->v.attempt)
        self->send(coordinator, attempt_atom::value, std::size_t{0});
      if (!b->v.call) {
        self->state.promise.deliver(std::string(100, 'x'));
        self->quit();
        return self->state.promise;
      }
      boost::asio::post(b->loops->loop(0), [me = caf::actor_cast<caf::actor>(self)] {
        caf::anon_send(me, done_atom::value, std::string(100, 'x'));
      });
      return self->state.promise;
    },
    [=](done_atom, std::string& body) {
      self->state.promise.deliver(std::move(body));
      self->quit();
    },
  };
}

struct coordinator_state {
  std::size_t open = 0;
};

void next(caf::actor_system& sys, bench_state* b);

caf::behavior coordinator(caf::stateful_actor<coordinator_state>* self, bench_state* b) {
  self->state.open = b->sections;
  for (std::size_t i = 0; i < b->sections; ++i) {
    auto w = self->spawn(worker, caf::actor_cast<caf::actor>(self), b);
    self->request(w, caf::infinite, run_atom::value).then([=](std::string&) {
      if (--self->state.open == 0) {
        self->quit();
        next(self->system(), b);
      }
    });
  }
  return {
    [](attempt_atom, std::size_t) {},
  };
}

void next(caf::actor_system& sys, bench_state* b) {
  if (b->left == 0)
    return b->done.set_value();
  --b->left;
  sys.spawn(coordinator, b);
}

double thread_cpu_seconds(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

} // namespace

int main(int argc, char** argv) {
  const std::size_t requests = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200000;
  const std::size_t sections = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1;
  gather::io_loops loops{1};
  loops.start();
  caf::actor_system_config cfg;
  gather::loop_scheduler::install(cfg, loops);
  caf::actor_system sys{cfg};
  clockid_t loop_clock{};
  {
    std::promise<clockid_t> id;
    boost::asio::post(loops.loop(0), [&] {
      clockid_t c{};
      pthread_getcpuclockid(pthread_self(), &c);
      id.set_value(c);
    });
    loop_clock = id.get_future().get();
  }
  const variant variants[] = {
    {"spawn + request/then + reply + quit", false, false, false},
    {"+ call completion as a message (gateway shape)", false, false, true},
    {"+ worker monitors coordinator (until 12-03)", true, false, true},
    {"+ attempt message to coordinator (until 12-03)", true, true, true},
  };
  std::printf("actor_cost: %zu requests of %zu section(s), one loop\n", requests, sections);
  std::printf("%-50s %12s\n", "variant", "us_cpu/req");
  for (int round = 0; round < 2; ++round) // the first round warms the allocator's free lists
    for (const auto& v : variants) {
      bench_state b;
      b.loops = &loops;
      b.v = v;
      b.sections = sections;
      b.left = requests;
      auto finished = b.done.get_future();
      const double before = thread_cpu_seconds(loop_clock);
      boost::asio::post(loops.loop(0), [&] { next(sys, &b); });
      finished.wait();
      const double after = thread_cpu_seconds(loop_clock);
      if (round == 1)
        std::printf("%-50s %12.2f\n", v.name, (after - before) * 1e6 / requests);
    }
  return 0;
}
