#pragma once
// CPU affinity of the calling process, as people read it ("0-3,8").
#include <span>
#include <string>
#include <vector>

namespace autotrain {

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> cpu_affinity();

// Ascending CPU ids as a compact list: {0,1,2,5,7,8} -> "0-2,5,7-8"; {} -> "".
std::string format_cpu_list(std::span<const int> cpus);

}  // namespace autotrain
