#include "gather/runtime/loop_timer.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace gather {

struct loop_timer::pending {
  explicit pending(boost::asio::io_context& loop) : context(loop), timer(loop) {}
  boost::asio::io_context& context;
  boost::asio::steady_timer timer;
};

void loop_timer::arm(boost::asio::io_context& loop, std::chrono::microseconds delay,
                     std::function<void()> fire) {
  cancel();
  pending_ = std::make_shared<pending>(loop);
  pending_->timer.expires_after(delay);
  pending_->timer.async_wait([keep = pending_, fire = std::move(fire)](const boost::system::error_code& ec) {
    if (!ec)
      fire();
  });
}

void loop_timer::cancel() {
  if (!pending_)
    return;
  auto p = std::move(pending_);
  if (p->context.get_executor().running_in_this_thread())
    p->timer.cancel();
  else
    boost::asio::post(p->context, [p] { p->timer.cancel(); });
}

} // namespace gather
