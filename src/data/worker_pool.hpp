#pragma once
// A fixed set of threads that run batches of tasks, for prepare's tokenizing. The threads live
// as long as the pool, so what each keeps thread-locally (the tokenizer's piece cache, PCRE2's
// match state) stays warm from one batch to the next.
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace autotrain::data {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);  // threads - 1 workers: the caller of run() is one
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Calls task(i) for every i in [0, count) on all threads and returns when all are done. The
  // exception of the lowest i that threw is rethrown here, after the batch has finished: the
  // same one whatever the threads' timing (an error names the first bad row of a file).
  void run(size_t count, const std::function<void(size_t)>& task);

 private:
  void stop();
  void work_on_batch();
  void worker_loop();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t count_ = 0;
  size_t next_ = 0;      // next task index to hand out
  size_t finished_ = 0;  // tasks completed in this batch
  size_t batch_ = 0;     // batch number, so a worker takes each batch once
  bool stopping_ = false;
  std::exception_ptr failure_;
  size_t failure_index_ = 0;  // the task failure_ came from
};

}  // namespace autotrain::data
