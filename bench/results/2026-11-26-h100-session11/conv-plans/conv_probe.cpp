// Probe: host time per call of cuDNN's legacy conv forward (descriptors each call,
// algorithm cached) vs a backend-API execution plan built once.
#include <cuda_runtime.h>
#include <cudnn.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x)                                                                           \
  do {                                                                                  \
    auto s_ = (x);                                                                      \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                                   \
      std::printf("%s:%d %s -> %s\n", __FILE__, __LINE__, #x, cudnnGetErrorString(s_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
using Clock = std::chrono::steady_clock;
struct G {
  int n, c, h, w, k, r, stride, pad, oh, ow;
};
cudnnBackendDescriptor_t tensor(int64_t uid, std::vector<int64_t> d) {
  cudnnBackendDescriptor_t t;
  CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t));
  std::vector<int64_t> st(4);
  st[3] = 1;
  st[2] = d[3];
  st[1] = d[2] * d[3];
  st[0] = d[1] * d[2] * d[3];
  cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  int64_t al = 4;
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, d.data()));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st.data()));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &al));
  CK(cudnnBackendFinalize(t));
  return t;
}
struct Plan {
  cudnnBackendDescriptor_t plan;
  int64_t ws;
};
Plan backend_plan(cudnnHandle_t h, const G& g) {
  auto x = tensor('x', {g.n, g.c, g.h, g.w}), w = tensor('w', {g.k, g.c, g.r, g.r}),
       y = tensor('y', {g.n, g.k, g.oh, g.ow});
  cudnnBackendDescriptor_t conv;
  CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
  cudnnDataType_t ct = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t sd = 2;
  int64_t dil[2] = {1, 1}, str[2] = {g.stride, g.stride}, pad[2] = {g.pad, g.pad};
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &sd));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
  CK(cudnnBackendFinalize(conv));
  cudnnBackendDescriptor_t op;
  CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
  float alpha = 1, beta = 0;
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                              &conv));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  CK(cudnnBackendFinalize(op));
  cudnnBackendDescriptor_t graph;
  CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
  CK(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
  CK(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  CK(cudnnBackendFinalize(graph));
  cudnnBackendDescriptor_t heur;
  CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
  cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
  CK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
  CK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm));
  CK(cudnnBackendFinalize(heur));
  int64_t count = 0;
  CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  std::vector<cudnnBackendDescriptor_t> cfgs(count);
  for (auto& c : cfgs) CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c));
  CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                              cfgs.data()));
  std::printf("  heuristics: %lld configs\n", (long long)count);
  for (int64_t i = 0; i < count; ++i) {
    cudnnBackendDescriptor_t eng;
    CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng));
    int64_t got = 0;
    CK(cudnnBackendGetAttribute(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &eng));
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t nn = 0;
    CK(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn, notes));
    bool tc = std::any_of(notes, notes + nn, [](auto n) {
      return n == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || n == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
    });
    if (tc) {
      std::printf("  config %lld: tensor core, skipped\n", (long long)i);
      continue;
    }
    cudnnBackendDescriptor_t plan;
    CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    CK(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    CK(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                &cfgs[i]));
    if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) {
      std::printf("  config %lld: finalize failed\n", (long long)i);
      continue;
    }
    int64_t ws = 0;
    CK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got, &ws));
    std::printf("  config %lld chosen, workspace %lld\n", (long long)i, (long long)ws);
    return {plan, ws};
  }
  std::printf("no plan\n");
  std::exit(1);
}
int main() {
  cudnnHandle_t h;
  CK(cudnnCreate(&h));
  cudaStream_t s;
  cudaStreamCreate(&s);
  CK(cudnnSetStream(h, s));
  std::printf("cudnn %zu\n", cudnnGetVersion());
  for (G g : {G{32, 1, 16, 16, 8, 3, 1, 1, 16, 16}, G{32, 8, 16, 16, 16, 3, 2, 1, 8, 8},
              G{32, 16, 8, 8, 16, 3, 2, 1, 4, 4}, G{4, 16, 8, 8, 16, 3, 2, 1, 4, 4}}) {
    std::printf("shape n%d c%d %dx%d k%d stride %d\n", g.n, g.c, g.h, g.w, g.k, g.stride);
    float *x, *w, *y, *ref;
    void* ws = nullptr;
    size_t xs = (size_t)g.n * g.c * g.h * g.w, wsz = (size_t)g.k * g.c * 9, ys = (size_t)g.n * g.k * g.oh * g.ow;
    cudaMalloc(&x, xs * 4);
    cudaMalloc(&w, wsz * 4);
    cudaMalloc(&y, ys * 4);
    cudaMalloc(&ref, ys * 4);
    cudaMalloc(&ws, 64 << 20);
    std::vector<float> hx(xs), hw(wsz);
    for (auto& v : hx) v = (rand() % 100) / 50.f - 1;
    for (auto& v : hw) v = (rand() % 100) / 50.f - 1;
    cudaMemcpy(x, hx.data(), xs * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(w, hw.data(), wsz * 4, cudaMemcpyHostToDevice);
    // legacy, as glassbox runs it
    cudnnConvolutionFwdAlgo_t algo{};
    size_t wsb = 0;
    auto legacy = [&](float* out) {
      cudnnTensorDescriptor_t dx, dy;
      cudnnFilterDescriptor_t dw;
      cudnnConvolutionDescriptor_t dc;
      cudnnCreateTensorDescriptor(&dx);
      cudnnCreateTensorDescriptor(&dy);
      cudnnCreateFilterDescriptor(&dw);
      cudnnCreateConvolutionDescriptor(&dc);
      cudnnSetTensor4dDescriptor(dx, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, g.n, g.c, g.h, g.w);
      cudnnSetTensor4dDescriptor(dy, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, g.n, g.k, g.oh, g.ow);
      cudnnSetFilter4dDescriptor(dw, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, g.k, g.c, 3, 3);
      cudnnSetConvolution2dDescriptor(dc, g.pad, g.pad, g.stride, g.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                      CUDNN_DATA_FLOAT);
      cudnnSetConvolutionMathType(dc, CUDNN_FMA_MATH);
      if (wsb == 0 && algo == 0) {
        cudnnConvolutionFwdAlgoPerf_t perf[8];
        int found = 0;
        CK(cudnnGetConvolutionForwardAlgorithm_v7(h, dx, dw, dc, dy, 8, &found, perf));
        algo = perf[0].algo;
        CK(cudnnGetConvolutionForwardWorkspaceSize(h, dx, dw, dc, dy, algo, &wsb));
      }
      float one = 1, zero = 0;
      CK(cudnnConvolutionForward(h, &one, dx, x, dw, w, dc, algo, ws, wsb, &zero, dy, out));
      cudnnDestroyConvolutionDescriptor(dc);
      cudnnDestroyFilterDescriptor(dw);
      cudnnDestroyTensorDescriptor(dy);
      cudnnDestroyTensorDescriptor(dx);
    };
    auto t0 = Clock::now();
    Plan p = backend_plan(h, g);
    std::printf("  plan built in %.0f us\n", std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    auto backend = [&](float* out) {
      cudnnBackendDescriptor_t vp;
      CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
      int64_t uids[3] = {'x', 'w', 'y'};
      void* ptrs[3] = {x, w, out};
      CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
      CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs));
      CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
      CK(cudnnBackendFinalize(vp));
      CK(cudnnBackendExecute(h, p.plan, vp));
      CK(cudnnBackendDestroyDescriptor(vp));
    };
    for (int i = 0; i < 20; ++i) {
      legacy(ref);
      backend(y);
    }
    cudaStreamSynchronize(s);
    std::vector<float> a(ys), b(ys);
    cudaMemcpy(a.data(), ref, ys * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), y, ys * 4, cudaMemcpyDeviceToHost);
    double md = 0;
    for (size_t i = 0; i < ys; ++i) md = std::max(md, (double)std::abs(a[i] - b[i]));
    std::printf("  max |legacy - backend| = %g (legacy algo %d)\n", md, (int)algo);
    for (int round = 0; round < 3; ++round) {
      for (auto [name, f] : {std::pair<const char*, int>{"legacy", 0}, {"backend", 1}}) {
        const int N = 300;
        auto t = Clock::now();
        for (int i = 0; i < N; ++i) {
          if (f)
            backend(y);
          else
            legacy(ref);
        }
        double host = std::chrono::duration<double, std::micro>(Clock::now() - t).count() / N;
        cudaStreamSynchronize(s);
        double all = std::chrono::duration<double, std::micro>(Clock::now() - t).count() / N;
        std::printf("  %-8s host %.1f us/call, with sync %.1f us/call\n", name, host, all);
      }
    }
    {
      float* bias;
      cudaMalloc(&bias, g.k * 4);
      cudaMemset(bias, 0, g.k * 4);
      cudnnTensorDescriptor_t dy, db;
      cudnnCreateTensorDescriptor(&dy);
      cudnnCreateTensorDescriptor(&db);
      cudnnSetTensor4dDescriptor(dy, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, g.n, g.k, g.oh, g.ow);
      cudnnSetTensor4dDescriptor(db, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, g.k, 1, 1);
      float one = 1, zero = 0;
      for (int round = 0; round < 2; ++round) {
        const int N = 300;
        auto t = Clock::now();
        for (int i = 0; i < N; ++i) CK(cudnnAddTensor(h, &one, db, bias, &one, dy, y));
        double add = std::chrono::duration<double, std::micro>(Clock::now() - t).count() / N;
        t = Clock::now();
        for (int i = 0; i < N; ++i) CK(cudnnConvolutionBackwardBias(h, &one, dy, y, &zero, db, bias));
        double bb = std::chrono::duration<double, std::micro>(Clock::now() - t).count() / N;
        cudaStreamSynchronize(s);
        std::printf("  cudnnAddTensor host %.1f us/call, cudnnConvolutionBackwardBias host %.1f us/call\n", add, bb);
      }
      cudaFree(bias);
    }
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    cudaFree(ref);
    cudaFree(ws);
  }
}
