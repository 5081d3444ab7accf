#pragma once
// The one check macro for HDF5 calls and RAII owners for every hid_t the ckpt layer opens.
// HDF5's own error-stack printing is turned off once (silence_hdf5_errors); a failing call
// becomes an autotrain::Error naming the call, the file and the object it was working on.
#include <hdf5.h>

#include <string>
#include <utility>

namespace autotrain::ckpt {

// Turns off HDF5's automatic printing of its error stack (process-wide, idempotent): our
// messages say what failed and where, and the raw stack would be printed by every rank.
void silence_hdf5_errors();

// The innermost message of HDF5's current error stack ("" when there is none).
std::string hdf5_error_detail();

[[noreturn]] void throw_hdf5_error(const char* call, const std::string& where, const char* file,
                                   int line);

// One kind of close function per hid_t kind (file, group, dataset, dataspace, property list,
// attribute, datatype).
enum class H5Kind { file, group, dataset, dataspace, plist, attribute, datatype };

// Owns one hid_t and closes it with the matching H5*close on destruction.
template <H5Kind kind>
class H5Handle {
 public:
  H5Handle() = default;
  explicit H5Handle(hid_t id) : id_(id) {}
  ~H5Handle() { reset(); }
  H5Handle(H5Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  H5Handle& operator=(H5Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now and reports failure (a file close is where buffered metadata is written, so its
  // status matters); the destructor closes silently.
  herr_t close();
  void reset() { (void)close(); }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using H5File = H5Handle<H5Kind::file>;
using H5Group = H5Handle<H5Kind::group>;
using H5Dataset = H5Handle<H5Kind::dataset>;
using H5Space = H5Handle<H5Kind::dataspace>;
using H5Plist = H5Handle<H5Kind::plist>;
using H5Attribute = H5Handle<H5Kind::attribute>;
using H5Type = H5Handle<H5Kind::datatype>;

}  // namespace autotrain::ckpt

// Checks an HDF5 call returning herr_t or hid_t (negative = failure). `where` names the file
// and object, e.g. cat(path, ": dataset ", name).
#define AT_H5_CHECK(call, where)                                               \
  ([&]() {                                                                     \
    auto at_h5_result_ = (call);                                               \
    if (at_h5_result_ < 0)                                                     \
      ::autotrain::ckpt::throw_hdf5_error(#call, (where), __FILE__, __LINE__); \
    return at_h5_result_;                                                      \
  }())
