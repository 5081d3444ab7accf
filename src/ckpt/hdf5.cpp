#include "autotrain/ckpt/hdf5.hpp"

#include <mutex>

#include "autotrain/core/error.hpp"

namespace autotrain::ckpt {

void silence_hdf5_errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

namespace {

herr_t keep_innermost(unsigned, const H5E_error2_t* entry, void* out) {
  // The walk goes from the innermost error outwards; keep the first (most specific) one.
  auto* text = static_cast<std::string*>(out);
  if (text->empty() && entry->desc != nullptr) *text = entry->desc;
  return 0;
}

}  // namespace

std::string hdf5_error_detail() {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_innermost, &detail);
  return detail;
}

void throw_hdf5_error(const char* call, const std::string& where, const char* file, int line) {
  std::string detail = hdf5_error_detail();
  H5Eclear2(H5E_DEFAULT);
  throw Error(cat(where, ": HDF5 call failed: ", call, detail.empty() ? "" : " (", detail,
                  detail.empty() ? "" : ")", " [", file, ":", line, "]"));
}

template <H5Kind kind>
herr_t H5Handle<kind>::close() {
  if (id_ < 0) return 0;
  hid_t id = std::exchange(id_, H5I_INVALID_HID);
  switch (kind) {
    case H5Kind::file:
      return H5Fclose(id);
    case H5Kind::group:
      return H5Gclose(id);
    case H5Kind::dataset:
      return H5Dclose(id);
    case H5Kind::dataspace:
      return H5Sclose(id);
    case H5Kind::plist:
      return H5Pclose(id);
    case H5Kind::attribute:
      return H5Aclose(id);
    case H5Kind::datatype:
      return H5Tclose(id);
  }
  return -1;
}

template class H5Handle<H5Kind::file>;
template class H5Handle<H5Kind::group>;
template class H5Handle<H5Kind::dataset>;
template class H5Handle<H5Kind::dataspace>;
template class H5Handle<H5Kind::plist>;
template class H5Handle<H5Kind::attribute>;
template class H5Handle<H5Kind::datatype>;

}  // namespace autotrain::ckpt
