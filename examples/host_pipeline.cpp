// A host framework's pipeline with texel inside it. The host owns the OpenCL context, the queue
// and the buffers; it fills the inputs with its own kernel, hands texel a linalg fragment and its
// buffers, enqueues texel's run between two of its own kernels ordered by events, and checks the
// result on the CPU. Closing figures: what texel made the host wait for during the run (host
// transfers, synchronisations) and the device time of each stage.
//
//   texel_host_pipeline [--device gpu|cpu|NAME] [--fragment FILE.mlir] [--out-of-order]
//                       [--repeat N]
// The fragment defaults to the one below (arg2 = arg0 x arg1 + arg0, 64x128 by 128x128).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <texel/texel.hpp>
#include <vector>

namespace {

const char* kFragment = R"(
func.func @entry(%arg0: memref<64x128xf32>, %arg1: memref<128x128xf32>, %arg2: memref<64x128xf32>) {
  %0 = bufferization.to_tensor %arg0 restrict : memref<64x128xf32>
  %1 = bufferization.to_tensor %arg1 restrict : memref<128x128xf32>
  %2 = tensor.empty() : tensor<64x128xf32>
  %cst = arith.constant 0.000000e+00 : f32
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %4 = linalg.matmul ins(%0, %1 : tensor<64x128xf32>, tensor<128x128xf32>) outs(%3 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %5 = tensor.empty() : tensor<64x128xf32>
  %6 = linalg.add ins(%4, %0 : tensor<64x128xf32>, tensor<64x128xf32>) outs(%5 : tensor<64x128xf32>) -> tensor<64x128xf32>
  bufferization.materialize_in_destination %6 in restrict writable %arg2 : (tensor<64x128xf32>, memref<64x128xf32>) -> ()
  return
}
)";

// The host's own kernels: a seeded fill of its inputs, and a post-processing step (ReLU) that
// reads texel's output.
const char* kHostKernels = R"(
__kernel void host_fill(__global float* x, uint seed) {
  uint h = (uint)get_global_id(0) * 2654435761u ^ seed;
  h ^= h >> 15; h *= 0x2c1b3c6dU; h ^= h >> 12;
  x[get_global_id(0)] = (float)(h & 0xffff) / 32768.0f - 1.0f;
}
__kernel void host_relu(__global const float* x, __global float* y) {
  size_t i = get_global_id(0);
  y[i] = fmax(x[i], 0.0f);
}
)";

#define CL_CHECK(call)                                                                 \
  do {                                                                                 \
    cl_int err_ = (call);                                                              \
    if (err_ != CL_SUCCESS) {                                                          \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, err_); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

double EventMicros(cl_event e) {
  cl_ulong start = 0, end = 0;
  CL_CHECK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr));
  CL_CHECK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr));
  return (end - start) * 1e-3;
}

cl_device_id PickDevice(const std::string& want) {
  cl_platform_id platforms[16];
  cl_uint np = 0;
  CL_CHECK(clGetPlatformIDs(16, platforms, &np));
  cl_device_id first = nullptr;
  for (cl_uint p = 0; p < np; ++p) {
    cl_device_id devices[16];
    cl_uint nd = 0;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 16, devices, &nd) != CL_SUCCESS) continue;
    for (cl_uint d = 0; d < nd; ++d) {
      char name[256] = {};
      cl_device_type type = 0;
      clGetDeviceInfo(devices[d], CL_DEVICE_NAME, sizeof(name), name, nullptr);
      clGetDeviceInfo(devices[d], CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
      if (!first) first = devices[d];
      bool gpu = type & CL_DEVICE_TYPE_GPU, cpu = type & CL_DEVICE_TYPE_CPU;
      if ((want == "gpu" && gpu) || (want == "cpu" && cpu) ||
          (!want.empty() && want != "gpu" && want != "cpu" && std::strstr(name, want.c_str())))
        return devices[d];
      if (want.empty() && gpu) return devices[d];
    }
  }
  if (!want.empty() || !first) {
    std::fprintf(stderr, "no OpenCL device matches '%s'\n", want.c_str());
    std::exit(1);
  }
  return first;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_spec, fragment = kFragment;
  bool out_of_order = false;
  int repeat = 100;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      device_spec = argv[++i];
    } else if (arg == "--fragment" && i + 1 < argc) {
      std::ifstream f(argv[++i]);
      if (!f) {
        std::fprintf(stderr, "--fragment %s: cannot read it\n", argv[i]);
        return 1;
      }
      std::stringstream s;
      s << f.rdbuf();
      fragment = s.str();
    } else if (arg == "--out-of-order") {
      out_of_order = true;
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr,
                   "usage: %s [--device gpu|cpu|NAME] [--fragment FILE.mlir] "
                   "[--out-of-order] [--repeat N]\n",
                   argv[0]);
      return 2;
    }
  }

  // ---- the host framework's own OpenCL objects ----
  cl_device_id device = PickDevice(device_spec);
  cl_int err = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  CL_CHECK(err);
  cl_queue_properties props[] = {
      CL_QUEUE_PROPERTIES,
      static_cast<cl_queue_properties>(CL_QUEUE_PROFILING_ENABLE |
                                       (out_of_order ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0)),
      0};
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, props, &err);
  CL_CHECK(err);
  const char* src = kHostKernels;
  cl_program program = clCreateProgramWithSource(context, 1, &src, nullptr, &err);
  CL_CHECK(err);
  CL_CHECK(clBuildProgram(program, 1, &device, "", nullptr, nullptr));
  cl_kernel fill = clCreateKernel(program, "host_fill", &err);
  CL_CHECK(err);
  cl_kernel relu = clCreateKernel(program, "host_relu", &err);
  CL_CHECK(err);

  try {
    // ---- texel on the host's context and queue ----
    texel::Context ctx = texel::Context::Adopt(context, device, queue);
    texel::Model model = texel::Model::FromMemory(ctx, fragment);
    std::vector<texel_tensor_info_t> ins = model.inputs(), outs = model.outputs();
    if (ins.size() != 2 || outs.size() != 1 || ins[0].rank != 2 || ins[1].rank != 2) {
      std::fprintf(stderr, "the fragment must be arg2 = f(arg0 [MxK], arg1 [KxN]) as above\n");
      return 1;
    }
    const int64_t m = ins[0].shape[0], k = ins[0].shape[1], n = ins[1].shape[1];
    std::printf("device   %s\n", ctx.device().label);
    std::printf("queue    %s, the host's\n", out_of_order ? "out-of-order" : "in-order");
    std::printf("fragment %s[%lldx%lld], %s[%lldx%lld] -> %s[%lldx%lld], the host's cl_mem\n",
                ins[0].name, (long long)m, (long long)k, ins[1].name, (long long)k, (long long)n,
                outs[0].name, (long long)outs[0].shape[0], (long long)outs[0].shape[1]);

    cl_mem a = clCreateBuffer(context, CL_MEM_READ_WRITE, ins[0].bytes, nullptr, &err);
    cl_mem b = clCreateBuffer(context, CL_MEM_READ_WRITE, ins[1].bytes, nullptr, &err);
    cl_mem c = clCreateBuffer(context, CL_MEM_READ_WRITE, outs[0].bytes, nullptr, &err);
    cl_mem d = clCreateBuffer(context, CL_MEM_READ_WRITE, outs[0].bytes, nullptr, &err);
    texel::Session session(model);
    session.BindInput(ins[0].name, texel::Tensor::Buffer(a))
        .BindInput(ins[1].name, texel::Tensor::Buffer(b))
        .BindOutput(outs[0].name, texel::Tensor::Buffer(c));

    std::vector<double> fill_us, texel_us, relu_us, wall_us;
    texel_host_counters_t first{};
    for (int r = 0; r < repeat + 1; ++r) {  // run 0 is the warm-up
      // host kernel -> texel -> host kernel, each waiting for the one before by its event.
      cl_uint seed = 1000 + r;
      size_t na = m * k, nb = k * n, nc = m * n;
      cl_event filled[2], ran, relued;
      CL_CHECK(clSetKernelArg(fill, 0, sizeof(cl_mem), &a));
      CL_CHECK(clSetKernelArg(fill, 1, sizeof(cl_uint), &seed));
      CL_CHECK(
          clEnqueueNDRangeKernel(queue, fill, 1, nullptr, &na, nullptr, 0, nullptr, &filled[0]));
      seed += 7777;
      CL_CHECK(clSetKernelArg(fill, 0, sizeof(cl_mem), &b));
      CL_CHECK(clSetKernelArg(fill, 1, sizeof(cl_uint), &seed));
      CL_CHECK(
          clEnqueueNDRangeKernel(queue, fill, 1, nullptr, &nb, nullptr, 0, nullptr, &filled[1]));
      texel_host_counters_t before = ctx.host_counters();
      ran = session.Enqueue({filled[0], filled[1]});
      texel_host_counters_t after = ctx.host_counters();
      CL_CHECK(clSetKernelArg(relu, 0, sizeof(cl_mem), &c));
      CL_CHECK(clSetKernelArg(relu, 1, sizeof(cl_mem), &d));
      CL_CHECK(clEnqueueNDRangeKernel(queue, relu, 1, nullptr, &nc, nullptr, 1, &ran, &relued));
      CL_CHECK(clWaitForEvents(1, &relued));
      if (r == 0) {
        first = before;
      } else {
        fill_us.push_back(EventMicros(filled[0]) + EventMicros(filled[1]));
        relu_us.push_back(EventMicros(relued));
        cl_ulong t0 = 0, t1 = 0;  // texel's run: from the fills' end to its last command's end
        CL_CHECK(
            clGetEventProfilingInfo(filled[1], CL_PROFILING_COMMAND_END, sizeof(t0), &t0, nullptr));
        CL_CHECK(clGetEventProfilingInfo(ran, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr));
        texel_us.push_back(t1 > t0 ? (t1 - t0) * 1e-3 : 0.0);
      }
      if (after.transfers != before.transfers || after.syncs != before.syncs)
        std::printf("note     run %d: texel's enqueue waited on the host\n", r);
      if (r == repeat) {  // check the last run on the CPU
        std::vector<float> ha(na), hb(nb), hd(nc);
        CL_CHECK(clEnqueueReadBuffer(queue, a, CL_TRUE, 0, na * 4, ha.data(), 0, nullptr, nullptr));
        CL_CHECK(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, nb * 4, hb.data(), 0, nullptr, nullptr));
        CL_CHECK(clEnqueueReadBuffer(queue, d, CL_TRUE, 0, nc * 4, hd.data(), 0, nullptr, nullptr));
        double err2 = 0, norm2 = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double s = k == n ? ha[i * k + j] : 0.0;  // the default fragment adds arg0
            for (int64_t p = 0; p < k; ++p) s += double(ha[i * k + p]) * hb[p * n + j];
            s = std::max(s, 0.0);
            err2 += (hd[i * n + j] - s) * (hd[i * n + j] - s);
            norm2 += s * s;
          }
        double rel = std::sqrt(err2 / std::max(norm2, 1e-30));
        std::printf("check    relu(arg0 x arg1 + arg0) vs CPU: rel. L2 error %.3g %s\n", rel,
                    rel < 1e-5 ? "OK" : "FAILED");
        if (rel >= 1e-5 && fragment == kFragment) return 1;
      }
      for (cl_event e : {filled[0], filled[1], ran, relued}) clReleaseEvent(e);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    texel_host_counters_t end = ctx.host_counters();
    std::printf("runs     %d (after 1 warm-up), each: host fill -> texel -> host relu, by events\n",
                repeat);
    std::printf("host     texel's enqueue: %lld host transfers, %lld host waits (all runs)\n",
                (long long)(end.transfers - first.transfers), (long long)(end.syncs - first.syncs));
    std::printf("device   median us: host fill %.1f, texel %.1f, host relu %.1f\n", median(fill_us),
                median(texel_us), median(relu_us));
    for (cl_mem mem : {a, b, c, d}) clReleaseMemObject(mem);
  } catch (const texel::Exception& e) {
    std::fprintf(stderr, "texel: %s (%s)\n", e.what(), texel_status_name(e.status()));
    return 1;
  }
  clReleaseKernel(fill);
  clReleaseKernel(relu);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return 0;
}
