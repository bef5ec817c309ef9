// texel_launch_bench: what one kernel launch costs on a device, apart from the work it does, for
// models whose time at batch 1 is mostly kernel count (docs/precision.md). Raw OpenCL, no texel
// code: N launches of a kernel back to back, for an empty kernel (one work-group of 64) and a
// 128 x 768 float add (a transformer's residual), in:
//   in-order        one in-order queue: host time to enqueue them, and until clFinish
//   profiled        a queue with profiling: host time to enqueue them without events, and
//                   until clFinish; then with an event each, the mean START -> END per kernel
//                   and the mean gap from one kernel's END to the next one's START
//   out-of-order    one out-of-order queue, no dependencies (the launches may overlap)
//   two queues      two in-order queues, launches alternating between them
//   two threads     two host threads, each enqueueing half of them into its own queue
//   programs        one in-order queue, the add taken in turn from 16 programs (a model's
//                   kernels are programs of their own) and from 16 kernels of one program
// All times are per launch, in microseconds.
// Usage: texel_launch_bench [--device gpu|cpu] [--launches N]
#include <CL/cl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

void Check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) {
    std::fprintf(stderr, "texel_launch_bench: %s failed (%d)\n", what, err);
    std::exit(1);
  }
}

const char* kSource = R"(
__kernel void empty(__global float* x) {}
__kernel void add(__global const float* a, __global const float* b, __global float* y) {
  const int i = get_global_id(0);
  y[i] = a[i] + b[i];
})";

double Now() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Launch {
  cl_kernel kernel;
  size_t global, local;
};

}  // namespace

int main(int argc, char** argv) {
  cl_device_type type = CL_DEVICE_TYPE_GPU;
  int n = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--device") {
      type = value == "cpu" ? CL_DEVICE_TYPE_CPU : CL_DEVICE_TYPE_GPU;
    } else if (flag == "--launches") {
      n = std::max(10, std::atoi(value.c_str()));
    } else {
      std::fprintf(stderr, "usage: texel_launch_bench [--device gpu|cpu] [--launches N]\n");
      return 1;
    }
  }
  cl_uint np = 0;
  Check(clGetPlatformIDs(0, nullptr, &np), "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(np);
  Check(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
  cl_device_id device = nullptr;
  for (cl_platform_id p : platforms)
    if (!device && clGetDeviceIDs(p, type, 1, &device, nullptr) != CL_SUCCESS) device = nullptr;
  if (!device) {
    std::fprintf(stderr, "texel_launch_bench: no such device\n");
    return 1;
  }
  char name[256] = {0};
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
  std::printf("device: %s, %d launches each\n", name, n);
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  Check(err, "clCreateContext");
  cl_program prog = clCreateProgramWithSource(ctx, 1, &kSource, nullptr, &err);
  Check(err, "clCreateProgramWithSource");
  Check(clBuildProgram(prog, 1, &device, "", nullptr, nullptr), "clBuildProgram");
  const size_t elems = 128 * 768;
  cl_mem buf[3];
  for (cl_mem& b : buf) {
    b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, elems * sizeof(float), nullptr, &err);
    Check(err, "clCreateBuffer");
  }
  cl_kernel empty = clCreateKernel(prog, "empty", &err);
  Check(err, "clCreateKernel");
  cl_kernel add = clCreateKernel(prog, "add", &err);
  Check(err, "clCreateKernel");
  Check(clSetKernelArg(empty, 0, sizeof(cl_mem), &buf[0]), "clSetKernelArg");
  for (cl_uint a = 0; a < 3; ++a) Check(clSetKernelArg(add, a, sizeof(cl_mem), &buf[a]), "arg");
  auto queue = [&](cl_command_queue_properties props) {
    const cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, props, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, list, &err);
    return err == CL_SUCCESS ? q : nullptr;
  };
  cl_command_queue in_order = queue(0), profiled = queue(CL_QUEUE_PROFILING_ENABLE);
  cl_command_queue second = queue(0), ooo = queue(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  if (!in_order || !profiled || !second) Check(CL_INVALID_COMMAND_QUEUE, "clCreateCommandQueue");
  auto enqueue = [&](cl_command_queue q, const Launch& l, cl_event* ev) {
    Check(clEnqueueNDRangeKernel(q, l.kernel, 1, nullptr, &l.global, &l.local, 0, nullptr, ev),
          "clEnqueueNDRangeKernel");
  };
  for (const auto& [label, l] : {std::pair{"empty", Launch{empty, 64, 64}},
                                 std::pair{"add 128x768", Launch{add, elems, 256}}}) {
    // Warm-up.
    for (int i = 0; i < 20; ++i) enqueue(in_order, l, nullptr);
    clFinish(in_order);
    double t0 = Now();
    for (int i = 0; i < n; ++i) enqueue(in_order, l, nullptr);
    double t1 = Now();
    clFinish(in_order);
    double t2 = Now();
    std::printf("%-12s in-order      enqueue %7.2f  total %7.2f\n", label, (t1 - t0) / n,
                (t2 - t0) / n);
    // What profiling costs where no event is asked for (texel's runs ask for the last one only).
    for (int i = 0; i < 20; ++i) enqueue(profiled, l, nullptr);
    clFinish(profiled);
    t0 = Now();
    for (int i = 0; i < n; ++i) enqueue(profiled, l, nullptr);
    t1 = Now();
    clFinish(profiled);
    t2 = Now();
    std::printf("%-12s profiled      enqueue %7.2f  total %7.2f\n", label, (t1 - t0) / n,
                (t2 - t0) / n);
    std::vector<cl_event> ev(n);
    for (int i = 0; i < n; ++i) enqueue(profiled, l, &ev[i]);
    clFinish(profiled);
    double busy = 0, gap = 0;
    cl_ulong prev_end = 0;
    for (int i = 0; i < n; ++i) {
      cl_ulong s = 0, e = 0;
      clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_START, sizeof s, &s, nullptr);
      clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_END, sizeof e, &e, nullptr);
      busy += static_cast<double>(e - s) * 1e-3;
      if (i > 0) gap += (static_cast<double>(s) - static_cast<double>(prev_end)) * 1e-3;
      prev_end = e;
      clReleaseEvent(ev[i]);
    }
    std::printf("%-12s profiled      start->end %7.2f  end->next start %7.2f\n", label, busy / n,
                gap / (n - 1));
    if (ooo) {
      t0 = Now();
      for (int i = 0; i < n; ++i) enqueue(ooo, l, nullptr);
      clFinish(ooo);
      std::printf("%-12s out-of-order  total %7.2f\n", label, (Now() - t0) / n);
    }
    t0 = Now();
    for (int i = 0; i < n; ++i) enqueue(i % 2 ? second : in_order, l, nullptr);
    clFinish(in_order);
    clFinish(second);
    std::printf("%-12s two queues    total %7.2f\n", label, (Now() - t0) / n);
    // Whether the driver lets host threads enqueue at once: half the launches from each of two
    // threads, each into its own queue.
    t0 = Now();
    std::thread other([&] {
      for (int i = 0; i < n / 2; ++i) enqueue(second, l, nullptr);
    });
    for (int i = 0; i < n / 2; ++i) enqueue(in_order, l, nullptr);
    other.join();
    clFinish(in_order);
    clFinish(second);
    std::printf("%-12s two threads   total %7.2f\n", label, (Now() - t0) / n);
  }
  // Kernels of different programs in turn, against as many kernels of one program.
  const int kPrograms = 16;
  std::vector<cl_kernel> own, shared;
  std::string one;
  for (int i = 0; i < kPrograms; ++i) {
    std::string src = "__kernel void add" + std::to_string(i) +
                      "(__global const float* a, __global const float* b, __global float* y) {\n"
                      "  const int i = get_global_id(0);\n  y[i] = a[i] + b[i] + " +
                      std::to_string(i) + ";\n}\n";
    one += src;
    const char* text = src.c_str();
    cl_program p = clCreateProgramWithSource(ctx, 1, &text, nullptr, &err);
    Check(err, "clCreateProgramWithSource");
    Check(clBuildProgram(p, 1, &device, "", nullptr, nullptr), "clBuildProgram");
    own.push_back(clCreateKernel(p, ("add" + std::to_string(i)).c_str(), &err));
    Check(err, "clCreateKernel");
  }
  const char* text = one.c_str();
  cl_program all = clCreateProgramWithSource(ctx, 1, &text, nullptr, &err);
  Check(err, "clCreateProgramWithSource");
  Check(clBuildProgram(all, 1, &device, "", nullptr, nullptr), "clBuildProgram");
  for (int i = 0; i < kPrograms; ++i) {
    shared.push_back(clCreateKernel(all, ("add" + std::to_string(i)).c_str(), &err));
    Check(err, "clCreateKernel");
  }
  for (auto* set : {&own, &shared})
    for (cl_kernel k : *set)
      for (cl_uint a = 0; a < 3; ++a) Check(clSetKernelArg(k, a, sizeof(cl_mem), &buf[a]), "arg");
  for (const auto& [label, set] :
       {std::pair{"16 programs", &own}, std::pair{"one program", &shared}}) {
    for (int i = 0; i < 32; ++i)
      enqueue(in_order, Launch{(*set)[i % kPrograms], elems, 256}, nullptr);
    clFinish(in_order);
    double t0 = Now();
    for (int i = 0; i < n; ++i)
      enqueue(in_order, Launch{(*set)[i % kPrograms], elems, 256}, nullptr);
    double t1 = Now();
    clFinish(in_order);
    std::printf("%-12s in-order      enqueue %7.2f  total %7.2f\n", label, (t1 - t0) / n,
                (Now() - t0) / n);
  }
  return 0;
}
