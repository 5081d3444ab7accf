#pragma once
// Private helpers of the ckpt layer: typed attributes and small datasets on top of hdf5.hpp.
// `where` always names the file (and object) for error messages.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "autotrain/ckpt/hdf5.hpp"

namespace autotrain::ckpt::h5 {

void write_attribute(hid_t object, const char* name, const std::string& value,
                     const std::string& where);
void write_attribute(hid_t object, const char* name, int64_t value, const std::string& where);
void write_attribute(hid_t object, const char* name, const std::vector<uint64_t>& values,
                     const std::string& where);

bool has_attribute(hid_t object, const char* name);
std::string read_string_attribute(hid_t object, const char* name, const std::string& where);
int64_t read_int_attribute(hid_t object, const char* name, const std::string& where);
std::vector<uint64_t> read_uint_array_attribute(hid_t object, const char* name,
                                                const std::string& where);

// Creates intermediate groups when a link path has several components.
H5Plist link_create_plist(const std::string& where);

// A dataspace with one selection: [offset, offset + count) of a 1-D space, or nothing.
void select_range(hid_t space, uint64_t offset, uint64_t count, const std::string& where);

// fsync a file or a folder (a rename is durable only once its folder is synced).
void fsync_path(const std::filesystem::path& path);

}  // namespace autotrain::ckpt::h5
