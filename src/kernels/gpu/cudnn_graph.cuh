#pragma once
// A small owner of cuDNN backend descriptors (cudnn_graph.h) for cudnn_attention.cu: tensors,
// the operations between them, the finalized operation graph and the execution plan that
// heuristics pick for it. Every cudnnStatus_t is checked where it is returned; an Error names
// the call and the attribute, with cudnnGetErrorString and cudnnGetLastErrorString.
// Host code only; compiled only with cuDNN (AUTOTRAIN_HAVE_CUDNN: real CUDA builds that found it).
#ifdef AUTOTRAIN_HAVE_CUDNN
#include <cudnn_graph.h>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/attention_choice.hpp"  // SdpaLayout

namespace autotrain::kernels::gpu::cudnn {

// Throws Error "cuDNN: <what>: <status string> (<cuDNN's last error message>)" unless SUCCESS.
void check(cudnnStatus_t status, const std::string& what);

// What Graph::build throws without a GPU (deviceless) where an engine took the graph and compiled
// its kernels, and only loading them failed: this machine has no CUDA driver (or its stub).
class CompiledWithoutDriver : public Error {
 public:
  using Error::Error;
};

class Descriptor;
// A device-properties descriptor from its JSON (CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, cuDNN
// 9.8 and later): a GPU's description for building plans where there is none.
Descriptor device_properties(const std::string& json);

// One backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type, const char* name);
  ~Descriptor();
  Descriptor(Descriptor&& other) noexcept;
  Descriptor& operator=(Descriptor&& other) noexcept;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }
  // cudnnBackendSetAttribute(get(), attribute, type, count, values); `attribute_name` for errors.
  void set(cudnnBackendAttributeName_t attribute, const char* attribute_name,
           cudnnBackendAttributeType_t type, std::int64_t count, const void* values);
  // One backend descriptor as the attribute's value.
  void set(cudnnBackendAttributeName_t attribute, const char* attribute_name,
           const Descriptor& value);
  void finalize();

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
  const char* name_;
};

// A tensor of the graph: its descriptor, unique id, dims and strides ([b, h, s, d]) and type.
struct Tensor {
  const Descriptor* desc = nullptr;
  std::int64_t uid = 0;
  std::array<std::int64_t, 4> dims{};
  std::array<std::int64_t, 4> strides{};
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
};

// An execution plan and what it needs at run time.
class Plan {
 public:
  Plan(Descriptor plan, std::string engine);
  std::int64_t workspace_bytes() const { return workspace_bytes_; }
  // "engine 7 (nondeterministic)": which engine heuristics gave, for the log.
  const std::string& engine() const { return engine_; }
  // Runs the plan on the handle's stream with the tensors `uids` at `pointers` (device memory,
  // or host scalars passed by value) and `workspace` (workspace_bytes() of device memory).
  void execute(cudnnHandle_t handle, const std::vector<std::int64_t>& uids,
               const std::vector<void*>& pointers, void* workspace) const;

 private:
  Descriptor plan_;
  std::string engine_;
  std::int64_t workspace_bytes_ = 0;
};

// The operations of one graph, then its plan.
class Graph {
 public:
  // For the GPU of `handle`, or (handle null) for the GPU `device` describes: cuDNN from 9.8
  // builds plans without a GPU for a device-properties descriptor (deviceless compilation).
  explicit Graph(cudnnHandle_t handle, const Descriptor* device = nullptr)
      : handle_(handle), device_(device) {}

  // A tensor in memory that the variant pack binds to `uid`.
  Tensor tensor(std::int64_t uid, const SdpaLayout& layout, cudnnDataType_t type);
  // An fp32 host scalar passed by value, broadcast to any shape.
  Tensor scalar(std::int64_t uid);
  // An intermediate that exists only inside the fused kernels.
  Tensor intermediate(const std::array<std::int64_t, 4>& dims,
                      const std::array<std::int64_t, 4>& strides, cudnnDataType_t type);
  Tensor intermediate_like(const Tensor& like, cudnnDataType_t type);

  // y = mode(x), mode(x, b), or for BINARY_SELECT t ? x : b; `math` the compute type. axis >= 0
  // for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, const Tensor& x, const Tensor* b, const Tensor* t,
                 const Tensor& y, cudnnDataType_t math = CUDNN_DATA_FLOAT, std::int64_t axis = -1);
  // New fp32 intermediates shaped like x: mode(x), mode(x, b).
  Tensor unary(cudnnPointwiseMode_t mode, const Tensor& x);
  Tensor binary(cudnnPointwiseMode_t mode, const Tensor& x, const Tensor& b);
  // dx = mode's backward (TANH_BWD) of dy at x.
  void activation_backward(cudnnPointwiseMode_t mode, const Tensor& dy, const Tensor& x,
                           const Tensor& dx);
  // c = a · b over the last two dims, batched (and broadcast) over the first two, fp32 compute.
  void matmul(const Tensor& a, const Tensor& b, const Tensor& c);
  // y = x reduced (ADD, MAX) over the dims where y's extent is 1 (or smaller: head groups).
  void reduction(cudnnReduceTensorOp_t op, const Tensor& x, const Tensor& y);
  // y views x's elements with other dims/strides (a transpose of the last two dims here).
  void reshape(const Tensor& x, const Tensor& y);

  // The finalized operation graph, heuristics (mode A, then the fallback list where A has
  // none) and the first engine configuration whose plan finalizes. Error with every reason. A
  // plan built without a handle (deviceless) serves only to check that cuDNN takes the graph.
  Plan build(const std::string& name);

 private:
  const Descriptor& keep(Descriptor descriptor);

  cudnnHandle_t handle_;
  const Descriptor* device_;
  std::deque<Descriptor> descriptors_;  // tensors and op settings: stable addresses
  std::vector<const Descriptor*> operations_;
  std::int64_t next_intermediate_uid_ = 1000;
};

}  // namespace autotrain::kernels::gpu::cudnn
#endif  // AUTOTRAIN_HAVE_CUDNN
