#include "cudnn_conv_plan.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/error.hpp"

namespace glassbox::cuda::detail {

namespace {

using autograd::Conv2dGeometry;

// The variant pack names each tensor by its role in the forward convolution.
enum Uid : std::int64_t { kX = 1, kW = 2, kY = 3 };

// A packed NCHW (or KCRS) FP32 tensor. Byte alignment 4 (a float's): a
// tensor may start anywhere a float does, and the plan is shared by all.
Descriptor tensor(Uid uid, std::array<std::int64_t, 4> dims) {
  std::array<std::int64_t, 4> strides{dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  const cudnnDataType_t type = CUDNN_DATA_FLOAT;
  const std::int64_t id = uid, alignment = 4;
  Descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type)
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data())
      .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data())
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment)
      .finalize();
  return t;
}

Descriptor convolution(const Conv2dGeometry& g) {
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t spatial = 2;
  const std::array<std::int64_t, 2> dilation{1, 1}, stride{g.stride, g.stride}, padding{g.padding, g.padding};
  Descriptor c(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  c.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial)
      .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation.data())
      .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride.data())
      .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding.data())
      .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding.data())
      .finalize();
  return c;
}

// A direction's operation type and its attributes, in the order x, w, y,
// convolution, alpha, beta.
struct Operation {
  cudnnBackendDescriptorType_t type;
  std::array<cudnnBackendAttributeName_t, 6> attributes;
};

Operation operation(ConvDirection direction) {
  switch (direction) {
    case ConvDirection::forward:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA}};
    case ConvDirection::backward_data:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}};
    case ConvDirection::backward_filter:
      break;
  }
  return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
          {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA}};
}

// Appends to `parts` the tensors, the convolution, its operation and the
// one-operation graph; returns the graph.
cudnnBackendDescriptor_t build_graph(std::vector<Descriptor>& parts, cudnnHandle_t handle, ConvDirection direction,
                                     const Conv2dGeometry& g) {
  parts.push_back(tensor(kX, {g.n, g.c, g.h, g.w}));
  parts.push_back(tensor(kW, {g.k, g.c, g.r, g.s}));
  parts.push_back(tensor(kY, {g.n, g.k, g.oh, g.ow}));
  parts.push_back(convolution(g));
  const Operation op = operation(direction);
  const float alpha = 1.0F, beta = 0.0F;  // the result is written, not added to
  Descriptor o(op.type);
  for (std::size_t i = 0; i < 4; ++i) {
    cudnnBackendDescriptor_t d = parts[parts.size() - 4 + i].get();
    o.set(op.attributes[i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
  }
  o.set(op.attributes[4], CUDNN_TYPE_FLOAT, 1, &alpha).set(op.attributes[5], CUDNN_TYPE_FLOAT, 1, &beta).finalize();
  cudnnBackendDescriptor_t od = o.get();
  parts.push_back(std::move(o));
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &od)
      .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
      .finalize();
  parts.push_back(std::move(graph));
  return parts.back().get();
}

// The engine configurations cuDNN's heuristics rank for `graph` in `mode`, best first.
std::vector<Descriptor> engine_configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode) {
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph)
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)
      .finalize();
  std::int64_t count = 0;
  check_cudnn(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                       0, &count, nullptr),
              "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)");
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  check_cudnn(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                       count, &count, raw.data()),
              "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)");
  while (static_cast<std::int64_t>(configs.size()) > count) configs.pop_back();  // fewer may have come
  return configs;
}

// Whether the configuration's engine computes in full FP32: no tensor cores,
// no inputs rounded down (TF32), as the CPU reference and FMA math do.
bool full_precision(const Descriptor& config) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  std::int64_t got = 0;
  check_cudnn(
      cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &e),
      "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINECFG_ENGINE)");
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  check_cudnn(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                       static_cast<std::int64_t>(notes.size()), &got, notes.data()),
              "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE)");
  return std::none_of(notes.begin(), notes.begin() + got, [](cudnnBackendNumericalNote_t n) {
    return n == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || n == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
  });
}

const char* direction_name(ConvDirection d) {
  switch (d) {
    case ConvDirection::forward:
      return "forward";
    case ConvDirection::backward_data:
      return "backward data";
    case ConvDirection::backward_filter:
      break;
  }
  return "backward filter";
}

}  // namespace

Descriptor::Descriptor(cudnnBackendDescriptorType_t type) {
  check_cudnn(cudnnBackendCreateDescriptor(type, &d_), "cudnnBackendCreateDescriptor");
}

Descriptor::~Descriptor() {
  if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
}

Descriptor& Descriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
                            const void* values) {
  cudnnStatus_t status = cudnnBackendSetAttribute(d_, name, type, count, values);
  if (status != CUDNN_STATUS_SUCCESS) {
    check_cudnn(status, ("cudnnBackendSetAttribute(attribute " + std::to_string(name) + ")").c_str());
  }
  return *this;
}

bool Descriptor::finalize(bool or_false) {
  cudnnStatus_t status = cudnnBackendFinalize(d_);
  if (status == CUDNN_STATUS_SUCCESS) return true;
  if (or_false) return false;
  check_cudnn(status, "cudnnBackendFinalize");
  return false;
}

std::shared_ptr<const ConvPlan> ConvPlan::build(cudnnHandle_t handle, ConvDirection direction,
                                                const Conv2dGeometry& g) {
  std::vector<Descriptor> parts;
  cudnnBackendDescriptor_t graph = build_graph(parts, handle, direction, g);
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    for (Descriptor& config : engine_configs(graph, mode)) {
      if (!full_precision(config)) continue;
      Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      cudnnBackendDescriptor_t c = config.get();
      plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
          .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
      if (!plan.finalize(true)) continue;  // this engine cannot run these shapes: the next one
      std::int64_t bytes = 0, got = 0;
      check_cudnn(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                           &got, &bytes),
                  "cudnnBackendGetAttribute(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)");
      parts.push_back(std::move(config));
      parts.push_back(std::move(plan));
      return std::make_shared<const ConvPlan>(std::move(parts), static_cast<std::size_t>(bytes));
    }
  }
  throw Error(std::string("cuDNN has no full-precision (FP32, no TF32) engine for this convolution's ") +
              direction_name(direction) + " (n=" + std::to_string(g.n) + " c=" + std::to_string(g.c) +
              " h=" + std::to_string(g.h) + " w=" + std::to_string(g.w) + " k=" + std::to_string(g.k) +
              " r=" + std::to_string(g.r) + " s=" + std::to_string(g.s) + " stride=" + std::to_string(g.stride) +
              " padding=" + std::to_string(g.padding) + ")");
}

void ConvPlan::execute(cudnnHandle_t handle, const void* x, const void* w, const void* y, void* workspace) const {
  const std::array<std::int64_t, 3> uids{kX, kW, kY};
  std::array<void*, 3> pointers{const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids.data())
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers.data())
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)
      .finalize();
  check_cudnn(cudnnBackendExecute(handle, parts_.back().get(), pack.get()), "cudnnBackendExecute");
}

}  // namespace glassbox::cuda::detail
