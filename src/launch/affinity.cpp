#include "autotrain/launch/affinity.hpp"

#include <sched.h>

#include "autotrain/core/error.hpp"

namespace autotrain {

std::vector<int> cpu_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::string format_cpu_list(std::span<const int> cpus) {
  std::string text;
  size_t i = 0;
  while (i < cpus.size()) {
    size_t last = i;  // extend the run while ids are consecutive
    while (last + 1 < cpus.size() && cpus[last + 1] == cpus[last] + 1) ++last;
    if (!text.empty()) text += ',';
    text += last == i ? cat(cpus[i]) : cat(cpus[i], "-", cpus[last]);
    i = last + 1;
  }
  return text;
}

}  // namespace autotrain
