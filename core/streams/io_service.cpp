#include "core/streams/io_service.h"

#include <pthread.h>
#include <sched.h>

#include <boost/asio/post.hpp>

#include <string>

namespace plexus::streams {

IoService::IoService(int threads, Priority priority, const char* name) : guard_(boost::asio::make_work_guard(context_)) {
  for (int k = 0; k < std::max(threads, 1); ++k) {
    threads_.emplace_back([this, k, priority, prefix = std::string(name)] {
      const std::string thread_name = prefix + std::to_string(k);
      pthread_setname_np(pthread_self(), thread_name.c_str());
      if (priority == Priority::kBackground) {
        const sched_param idle{};  // best effort: where SCHED_IDLE is refused, normal priority
        pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
      }
      context_.run();
    });
  }
}

IoService::~IoService() {
  guard_.reset();  // run() returns once the posted work is done
  for (std::thread& t : threads_) t.join();
}

void IoService::post(std::function<void()> task) { boost::asio::post(context_, std::move(task)); }

}  // namespace plexus::streams
