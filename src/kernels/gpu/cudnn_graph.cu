// cuDNN backend descriptors, operation graphs and execution plans (cudnn_graph.cuh). Every
// attribute's type and count follow cudnn_graph.h (9.19): tensors' dims and strides are
// CUDNN_TYPE_INT64 arrays of 4, their flags CUDNN_TYPE_BOOLEAN (bool), the ops' inputs and
// outputs one CUDNN_TYPE_BACKEND_DESCRIPTOR each.
#include "cudnn_graph.cuh"

#ifdef AUTOTRAIN_HAVE_CUDNN
#include <utility>

#include "autotrain/core/error.hpp"

namespace autotrain::kernels::gpu::cudnn {

std::string status_message(cudnnStatus_t status, const std::string& what) {
  char last[1024] = {};
  cudnnGetLastErrorString(last, sizeof(last));
  return cat("cuDNN: ", what, ": ", cudnnGetErrorString(status), " (",
             last[0] != '\0' ? last : "no further message", ")");
}

void check(cudnnStatus_t status, const std::string& what) {
  if (status != CUDNN_STATUS_SUCCESS) throw Error(status_message(status, what));
}

Descriptor device_properties(const std::string& json) {
  Descriptor device(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, "device properties");
  device.set(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, "CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION",
             CUDNN_TYPE_CHAR, static_cast<std::int64_t>(json.size()), json.data());
  device.finalize();
  return device;
}

Descriptor::Descriptor(cudnnBackendDescriptorType_t type, const char* name) : name_(name) {
  check(cudnnBackendCreateDescriptor(type, &desc_), cat("creating the ", name, " descriptor"));
}

Descriptor::~Descriptor() {
  if (desc_ != nullptr) cudnnBackendDestroyDescriptor(desc_);
}

Descriptor::Descriptor(Descriptor&& other) noexcept
    : desc_(std::exchange(other.desc_, nullptr)), name_(other.name_) {}

Descriptor& Descriptor::operator=(Descriptor&& other) noexcept {
  if (this != &other) {
    if (desc_ != nullptr) cudnnBackendDestroyDescriptor(desc_);
    desc_ = std::exchange(other.desc_, nullptr);
    name_ = other.name_;
  }
  return *this;
}

void Descriptor::set(cudnnBackendAttributeName_t attribute, const char* attribute_name,
                     cudnnBackendAttributeType_t type, std::int64_t count, const void* values) {
  check(cudnnBackendSetAttribute(desc_, attribute, type, count, values),
        cat("setting ", attribute_name, " of the ", name_, " descriptor"));
}

void Descriptor::set(cudnnBackendAttributeName_t attribute, const char* attribute_name,
                     const Descriptor& value) {
  cudnnBackendDescriptor_t handle = value.get();
  set(attribute, attribute_name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &handle);
}

void Descriptor::finalize() {
  check(cudnnBackendFinalize(desc_), cat("finalizing the ", name_, " descriptor"));
}

namespace {

// "engine 7" and, where the engine says so, "nondeterministic": which engine runs, for the log.
std::string describe_engine(const Descriptor& config) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine");
  cudnnBackendDescriptor_t engine_handle = engine.get();
  std::int64_t count = 0;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                               &engine_handle) != CUDNN_STATUS_SUCCESS) {
    return "engine ?";
  }
  std::int64_t index = -1;
  cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                           &count, &index);
  std::string text = cat("engine ", index);
  std::int64_t workspace = 0;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                               1, &count, &workspace) == CUDNN_STATUS_SUCCESS) {
    text += cat(", workspace ", (workspace + (1 << 20) - 1) >> 20, " MiB");
  }
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  std::int64_t notes_count = 0;
  if (cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                               CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                               &notes_count, notes) == CUDNN_STATUS_SUCCESS) {
    for (std::int64_t i = 0; i < notes_count; ++i) {
      if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) text += " (nondeterministic)";
    }
  }
  return text;
}

std::int64_t plan_workspace(const Descriptor& plan) {
  std::int64_t bytes = 0, count = 0;
  check(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                 CUDNN_TYPE_INT64, 1, &count, &bytes),
        "reading CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE");
  return bytes;
}

// The engine configurations heuristics recommend for `graph` in `mode`, best first (none where
// the mode has none for it).
std::vector<Descriptor> recommended_configs(const Descriptor& graph, const Descriptor* device,
                                            cudnnBackendHeurMode_t mode, std::string& reasons) {
  std::vector<Descriptor> configs;
  try {
    Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics");
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, "CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH",
                   graph);
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, "CUDNN_ATTR_ENGINEHEUR_MODE", CUDNN_TYPE_HEUR_MODE,
                   1, &mode);
    if (device != nullptr) {
      heuristics.set(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, "CUDNN_ATTR_ENGINEHEUR_DEVICEPROP", *device);
    }
    heuristics.finalize();
    std::int64_t available = 0;
    check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available, nullptr),
          "counting CUDNN_ATTR_ENGINEHEUR_RESULTS");
    if (available <= 0) return configs;
    std::vector<cudnnBackendDescriptor_t> handles;
    for (std::int64_t i = 0; i < available; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine configuration");
      handles.push_back(configs.back().get());
    }
    std::int64_t returned = 0;
    check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, available, &returned,
                                   handles.data()),
          "reading CUDNN_ATTR_ENGINEHEUR_RESULTS");
    if (returned < available) configs.erase(configs.begin() + returned, configs.end());
  } catch (const Error& e) {
    reasons += cat(" [heuristics mode ", static_cast<int>(mode), ": ", e.what(), "]");
    configs.clear();
  }
  return configs;
}

}  // namespace

Plan::Plan(Descriptor plan, std::string engine)
    : plan_(std::move(plan)), engine_(std::move(engine)), workspace_bytes_(plan_workspace(plan_)) {}

void Plan::execute(cudnnHandle_t handle, const std::vector<std::int64_t>& uids,
                   const std::vector<void*>& pointers, void* workspace) const {
  AT_CHECK(uids.size() == pointers.size(), "internal: cuDNN variant pack of ", uids.size(),
           " ids and ", pointers.size(), " pointers");
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
  const auto n = static_cast<std::int64_t>(uids.size());
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, "CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS",
           CUDNN_TYPE_INT64, n, uids.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, "CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS",
           CUDNN_TYPE_VOID_PTR, n, pointers.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, "CUDNN_ATTR_VARIANT_PACK_WORKSPACE",
           CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize();
  check(cudnnBackendExecute(handle, plan_.get(), pack.get()), cat("executing (", engine_, ")"));
}

const Descriptor& Graph::keep(Descriptor descriptor) {
  descriptors_.push_back(std::move(descriptor));
  return descriptors_.back();
}

namespace {

Descriptor tensor_descriptor(std::int64_t uid, const std::array<std::int64_t, 4>& dims,
                             const std::array<std::int64_t, 4>& strides, cudnnDataType_t type,
                             bool is_virtual, bool by_value) {
  Descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
  const std::int64_t alignment = 16;
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, "CUDNN_ATTR_TENSOR_DATA_TYPE", CUDNN_TYPE_DATA_TYPE, 1, &type);
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, "CUDNN_ATTR_TENSOR_DIMENSIONS", CUDNN_TYPE_INT64, 4,
        dims.data());
  t.set(CUDNN_ATTR_TENSOR_STRIDES, "CUDNN_ATTR_TENSOR_STRIDES", CUDNN_TYPE_INT64, 4,
        strides.data());
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, "CUDNN_ATTR_TENSOR_UNIQUE_ID", CUDNN_TYPE_INT64, 1, &uid);
  t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, "CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT", CUDNN_TYPE_INT64, 1,
        &alignment);
  t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, "CUDNN_ATTR_TENSOR_IS_VIRTUAL", CUDNN_TYPE_BOOLEAN, 1,
        &is_virtual);
  if (by_value) {
    t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, "CUDNN_ATTR_TENSOR_IS_BY_VALUE", CUDNN_TYPE_BOOLEAN, 1,
          &by_value);
  }
  t.finalize();
  return t;
}

}  // namespace

Tensor Graph::tensor(std::int64_t uid, const SdpaLayout& layout, cudnnDataType_t type) {
  const Descriptor& d =
      keep(tensor_descriptor(uid, layout.dims, layout.strides, type, false, false));
  return {&d, uid, layout.dims, layout.strides, type};
}

Tensor Graph::scalar(std::int64_t uid) {
  const std::array<std::int64_t, 4> ones{1, 1, 1, 1};
  const Descriptor& d = keep(tensor_descriptor(uid, ones, ones, CUDNN_DATA_FLOAT, false, true));
  return {&d, uid, ones, ones, CUDNN_DATA_FLOAT};
}

Tensor Graph::intermediate(const std::array<std::int64_t, 4>& dims,
                           const std::array<std::int64_t, 4>& strides, cudnnDataType_t type) {
  const std::int64_t uid = next_intermediate_uid_++;
  const Descriptor& d = keep(tensor_descriptor(uid, dims, strides, type, true, false));
  return {&d, uid, dims, strides, type};
}

Tensor Graph::intermediate_like(const Tensor& like, cudnnDataType_t type) {
  return intermediate(like.dims, like.strides, type);
}

void Graph::pointwise(cudnnPointwiseMode_t mode, const Tensor& x, const Tensor* b, const Tensor* t,
                      const Tensor& y, cudnnDataType_t math, std::int64_t axis) {
  Descriptor settings(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
  settings.set(CUDNN_ATTR_POINTWISE_MODE, "CUDNN_ATTR_POINTWISE_MODE", CUDNN_TYPE_POINTWISE_MODE, 1,
               &mode);
  settings.set(CUDNN_ATTR_POINTWISE_MATH_PREC, "CUDNN_ATTR_POINTWISE_MATH_PREC",
               CUDNN_TYPE_DATA_TYPE, 1, &math);
  if (axis >= 0) {
    settings.set(CUDNN_ATTR_POINTWISE_AXIS, "CUDNN_ATTR_POINTWISE_AXIS", CUDNN_TYPE_INT64, 1,
                 &axis);
  }
  settings.finalize();
  Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation");
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
         "CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR", settings);
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, "CUDNN_ATTR_OPERATION_POINTWISE_XDESC", *x.desc);
  if (b != nullptr) {
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, "CUDNN_ATTR_OPERATION_POINTWISE_BDESC", *b->desc);
  }
  if (t != nullptr) {
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, "CUDNN_ATTR_OPERATION_POINTWISE_TDESC", *t->desc);
  }
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, "CUDNN_ATTR_OPERATION_POINTWISE_YDESC", *y.desc);
  op.finalize();
  keep(std::move(settings));
  operations_.push_back(&keep(std::move(op)));
}

Tensor Graph::unary(cudnnPointwiseMode_t mode, const Tensor& x) {
  Tensor y = intermediate_like(x, CUDNN_DATA_FLOAT);
  pointwise(mode, x, nullptr, nullptr, y);
  return y;
}

Tensor Graph::binary(cudnnPointwiseMode_t mode, const Tensor& x, const Tensor& b) {
  Tensor y = intermediate_like(x, CUDNN_DATA_FLOAT);
  pointwise(mode, x, &b, nullptr, y);
  return y;
}

void Graph::activation_backward(cudnnPointwiseMode_t mode, const Tensor& dy, const Tensor& x,
                                const Tensor& dx) {
  Descriptor settings(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
  const cudnnDataType_t math = CUDNN_DATA_FLOAT;
  settings.set(CUDNN_ATTR_POINTWISE_MODE, "CUDNN_ATTR_POINTWISE_MODE", CUDNN_TYPE_POINTWISE_MODE, 1,
               &mode);
  settings.set(CUDNN_ATTR_POINTWISE_MATH_PREC, "CUDNN_ATTR_POINTWISE_MATH_PREC",
               CUDNN_TYPE_DATA_TYPE, 1, &math);
  settings.finalize();
  Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise backward operation");
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
         "CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR", settings);
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, "CUDNN_ATTR_OPERATION_POINTWISE_DYDESC", *dy.desc);
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, "CUDNN_ATTR_OPERATION_POINTWISE_XDESC", *x.desc);
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, "CUDNN_ATTR_OPERATION_POINTWISE_DXDESC", *dx.desc);
  op.finalize();
  keep(std::move(settings));
  operations_.push_back(&keep(std::move(op)));
}

void Graph::matmul(const Tensor& a, const Tensor& b, const Tensor& c) {
  Descriptor settings(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  settings.set(CUDNN_ATTR_MATMUL_COMP_TYPE, "CUDNN_ATTR_MATMUL_COMP_TYPE", CUDNN_TYPE_DATA_TYPE, 1,
               &compute);
  settings.finalize();
  Descriptor op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul operation");
  op.set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, "CUDNN_ATTR_OPERATION_MATMUL_ADESC", *a.desc);
  op.set(CUDNN_ATTR_OPERATION_MATMUL_BDESC, "CUDNN_ATTR_OPERATION_MATMUL_BDESC", *b.desc);
  op.set(CUDNN_ATTR_OPERATION_MATMUL_CDESC, "CUDNN_ATTR_OPERATION_MATMUL_CDESC", *c.desc);
  op.set(CUDNN_ATTR_OPERATION_MATMUL_DESC, "CUDNN_ATTR_OPERATION_MATMUL_DESC", settings);
  op.finalize();
  keep(std::move(settings));
  operations_.push_back(&keep(std::move(op)));
}

void Graph::reduction(cudnnReduceTensorOp_t reduce, const Tensor& x, const Tensor& y) {
  Descriptor settings(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction");
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  settings.set(CUDNN_ATTR_REDUCTION_OPERATOR, "CUDNN_ATTR_REDUCTION_OPERATOR",
               CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce);
  settings.set(CUDNN_ATTR_REDUCTION_COMP_TYPE, "CUDNN_ATTR_REDUCTION_COMP_TYPE",
               CUDNN_TYPE_DATA_TYPE, 1, &compute);
  settings.finalize();
  Descriptor op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction operation");
  op.set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, "CUDNN_ATTR_OPERATION_REDUCTION_XDESC", *x.desc);
  op.set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, "CUDNN_ATTR_OPERATION_REDUCTION_YDESC", *y.desc);
  op.set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, "CUDNN_ATTR_OPERATION_REDUCTION_DESC", settings);
  op.finalize();
  keep(std::move(settings));
  operations_.push_back(&keep(std::move(op)));
}

void Graph::reshape(const Tensor& x, const Tensor& y) {
  Descriptor op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape operation");
  op.set(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, "CUDNN_ATTR_OPERATION_RESHAPE_XDESC", *x.desc);
  op.set(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, "CUDNN_ATTR_OPERATION_RESHAPE_YDESC", *y.desc);
  op.finalize();
  operations_.push_back(&keep(std::move(op)));
}

Plan Graph::build(const std::string& name) {
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  if (handle_ != nullptr) {
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, "CUDNN_ATTR_OPERATIONGRAPH_HANDLE",
              CUDNN_TYPE_HANDLE, 1, &handle_);
  }
  std::vector<cudnnBackendDescriptor_t> ops;
  for (const Descriptor* op : operations_) ops.push_back(op->get());
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, "CUDNN_ATTR_OPERATIONGRAPH_OPS",
            CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<std::int64_t>(ops.size()), ops.data());
  graph.finalize();

  std::string reasons;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<Descriptor> configs = recommended_configs(graph, device_, mode, reasons);
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const std::string where =
          cat("configuration ", i, " of heuristics mode ", static_cast<int>(mode));
      try {
        Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
        if (handle_ != nullptr) {
          plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, "CUDNN_ATTR_EXECUTION_PLAN_HANDLE",
                   CUDNN_TYPE_HANDLE, 1, &handle_);
        }
        plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, "CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG",
                 configs[i]);
        const cudnnStatus_t status = cudnnBackendFinalize(plan.get());
        if (status == CUDNN_STATUS_SUCCESS)
          return Plan(std::move(plan), describe_engine(configs[i]));
        // Deviceless, a runtime-compiled engine compiles its kernels and then fails to load them
        // into a driver that is not there: the graph was taken.
        if (handle_ == nullptr && status == CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER) {
          throw CompiledWithoutDriver(cat("cuDNN: ", name, " graph compiled by ",
                                          describe_engine(configs[i]), " (", where,
                                          "), not loaded: no CUDA driver here"));
        }
        reasons += cat(" [", where, ": ",
                       status_message(status, "finalizing the execution plan descriptor"), "]");
      } catch (const CompiledWithoutDriver&) {
        throw;
      } catch (const Error& e) {
        reasons += cat(" [", where, ": ", e.what(), "]");
      }
    }
  }
  throw Error(cat("cuDNN: no engine runs the ", name, " graph (", operations_.size(),
                  " operations)", reasons.empty() ? " (heuristics recommended none)" : reasons));
}

}  // namespace autotrain::kernels::gpu::cudnn
#endif  // AUTOTRAIN_HAVE_CUDNN
