#pragma once
// The process's memory as the user sees it: its peak resident set, and what an allocation that
// failed (std::bad_alloc) is reported as.
#include <cstddef>
#include <exception>
#include <string>

namespace autotrain {

// Bytes of the process's peak resident set (VmHWM of /proc/self/status; getrusage's ru_maxrss
// where /proc is missing).
std::size_t peak_resident_bytes();

// Bytes of the process's address space now (VmSize of /proc/self/status; 0 without /proc): what
// an address-space limit (ulimit -v) already counts.
std::size_t address_space_bytes();

// "out of memory ..." with the peak resident set and what to change: a bare "std::bad_alloc"
// tells a user neither what ran out nor what to do.
std::string out_of_memory_message(std::size_t peak_bytes);

// What a command that failed with `error` prints: error.what(), or out_of_memory_message for a
// std::bad_alloc (and std::bad_array_new_length).
std::string failure_message(const std::exception& error);

}  // namespace autotrain
