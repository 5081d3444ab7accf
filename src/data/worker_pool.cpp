#include "worker_pool.hpp"

namespace autotrain::data {

WorkerPool::WorkerPool(int threads) {
  try {
    for (int t = 1; t < threads; ++t) workers_.emplace_back([this] { worker_loop(); });
  } catch (...) {
    stop();  // the threads already started must be joined before they are destroyed
    throw;
  }
}

WorkerPool::~WorkerPool() {
  stop();
}

void WorkerPool::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (auto& worker : workers_) worker.join();
  workers_.clear();
}

void WorkerPool::run(size_t count, const std::function<void(size_t)>& task) {
  if (count == 0) return;
  {
    const std::lock_guard lock(mutex_);
    task_ = &task;
    count_ = count;
    next_ = 0;
    finished_ = 0;
    failure_ = nullptr;
    ++batch_;
  }
  start_.notify_all();
  work_on_batch();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return finished_ == count_; });
  task_ = nullptr;
  if (failure_) std::rethrow_exception(failure_);
}

// Takes tasks of the current batch until none is left.
void WorkerPool::work_on_batch() {
  std::unique_lock lock(mutex_);
  while (task_ != nullptr && next_ < count_) {
    const size_t index = next_++;
    const auto* task = task_;
    lock.unlock();
    std::exception_ptr failure;
    try {
      (*task)(index);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (failure && (!failure_ || index < failure_index_)) {
      failure_ = failure;
      failure_index_ = index;
    }
    if (++finished_ == count_) done_.notify_all();
  }
}

void WorkerPool::worker_loop() {
  size_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || (batch_ != seen && task_ != nullptr); });
      if (stopping_) return;
      seen = batch_;
    }
    work_on_batch();
  }
}

}  // namespace autotrain::data
