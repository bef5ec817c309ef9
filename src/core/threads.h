// Work spread over threads where each claims its tasks from a shared counter. Thread safety: work
// is called concurrently and must synchronise what it shares.
#pragma once

#include <cstddef>
#include <functional>

namespace texel {

// Runs work(t) for t in [0, count), work(0) on the calling thread, and returns when all are
// done. Where a thread cannot start (std::system_error), fewer run: work must take its tasks from
// a shared counter, so that the others do the missing one's.
void RunOnThreads(size_t count, const std::function<void(size_t)>& work);

}  // namespace texel
