#include "h5_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "autotrain/core/error.hpp"

namespace autotrain::ckpt::h5 {
namespace {

H5Type string_type(size_t size, const std::string& where) {
  H5Type type(AT_H5_CHECK(H5Tcopy(H5T_C_S1), where));
  AT_H5_CHECK(H5Tset_size(type.get(), std::max<size_t>(size, 1)), where);
  AT_H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), where);
  return type;
}

H5Attribute create_attribute(hid_t object, const char* name, hid_t type, hid_t space,
                             const std::string& where) {
  if (H5Aexists(object, name) > 0) AT_H5_CHECK(H5Adelete(object, name), cat(where, " @", name));
  return H5Attribute(AT_H5_CHECK(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT),
                                 cat(where, " attribute ", name)));
}

}  // namespace

void write_attribute(hid_t object, const char* name, const std::string& value,
                     const std::string& where) {
  H5Type type = string_type(value.size(), where);
  H5Space space(AT_H5_CHECK(H5Screate(H5S_SCALAR), where));
  H5Attribute attribute = create_attribute(object, name, type.get(), space.get(), where);
  const char empty = '\0';
  AT_H5_CHECK(H5Awrite(attribute.get(), type.get(), value.empty() ? &empty : value.data()),
              cat(where, " attribute ", name));
}

void write_attribute(hid_t object, const char* name, int64_t value, const std::string& where) {
  H5Space space(AT_H5_CHECK(H5Screate(H5S_SCALAR), where));
  H5Attribute attribute = create_attribute(object, name, H5T_STD_I64LE, space.get(), where);
  AT_H5_CHECK(H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value), cat(where, " attribute ", name));
}

void write_attribute(hid_t object, const char* name, const std::vector<uint64_t>& values,
                     const std::string& where) {
  hsize_t dims[1] = {values.size()};
  H5Space space(AT_H5_CHECK(H5Screate_simple(1, dims, nullptr), where));
  H5Attribute attribute = create_attribute(object, name, H5T_STD_U64LE, space.get(), where);
  const uint64_t none = 0;
  AT_H5_CHECK(H5Awrite(attribute.get(), H5T_NATIVE_UINT64, values.empty() ? &none : values.data()),
              cat(where, " attribute ", name));
}

bool has_attribute(hid_t object, const char* name) {
  return H5Aexists(object, name) > 0;
}

namespace {

H5Attribute open_attribute(hid_t object, const char* name, const std::string& where) {
  AT_CHECK(has_attribute(object, name), where, ": attribute '", name,
           "' is missing (not an autotrain checkpoint, or a damaged one)");
  return H5Attribute(
      AT_H5_CHECK(H5Aopen(object, name, H5P_DEFAULT), cat(where, " attribute ", name)));
}

}  // namespace

std::string read_string_attribute(hid_t object, const char* name, const std::string& where) {
  H5Attribute attribute = open_attribute(object, name, where);
  H5Type type(AT_H5_CHECK(H5Aget_type(attribute.get()), where));
  AT_CHECK(H5Tget_class(type.get()) == H5T_STRING && H5Tis_variable_str(type.get()) == 0, where,
           ": attribute '", name, "' should be a fixed-length string");
  std::string value(H5Tget_size(type.get()), '\0');
  AT_H5_CHECK(H5Aread(attribute.get(), type.get(), value.data()), cat(where, " attribute ", name));
  value.resize(std::strlen(value.c_str()));
  return value;
}

int64_t read_int_attribute(hid_t object, const char* name, const std::string& where) {
  H5Attribute attribute = open_attribute(object, name, where);
  int64_t value = 0;
  AT_H5_CHECK(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value), cat(where, " attribute ", name));
  return value;
}

std::vector<uint64_t> read_uint_array_attribute(hid_t object, const char* name,
                                                const std::string& where) {
  H5Attribute attribute = open_attribute(object, name, where);
  H5Space space(AT_H5_CHECK(H5Aget_space(attribute.get()), where));
  hssize_t count = AT_H5_CHECK(H5Sget_simple_extent_npoints(space.get()), where);
  std::vector<uint64_t> values(static_cast<size_t>(count));
  uint64_t sink = 0;
  AT_H5_CHECK(H5Aread(attribute.get(), H5T_NATIVE_UINT64, values.empty() ? &sink : values.data()),
              cat(where, " attribute ", name));
  return values;
}

H5Plist link_create_plist(const std::string& where) {
  H5Plist lcpl(AT_H5_CHECK(H5Pcreate(H5P_LINK_CREATE), where));
  AT_H5_CHECK(H5Pset_create_intermediate_group(lcpl.get(), 1), where);
  return lcpl;
}

void select_range(hid_t space, uint64_t offset, uint64_t count, const std::string& where) {
  if (count == 0) {
    AT_H5_CHECK(H5Sselect_none(space), where);
    return;
  }
  hsize_t start[1] = {offset};
  hsize_t size[1] = {count};
  AT_H5_CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, size, nullptr), where);
}

void fsync_path(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  AT_CHECK(fd >= 0, path.string(), ": cannot open to fsync: ", std::strerror(errno));
  int status = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  AT_CHECK(status == 0, path.string(), ": fsync failed: ", std::strerror(saved));
}

}  // namespace autotrain::ckpt::h5
