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
//   probes          what a launch's cost depends on, one in-order queue each: the first 16
//                   enqueues onto an idle device (before any queue of the driver's can fill),
//                   kernels of 0 and 16 buffer arguments (16 buffers, or one buffer 16
//                   times), of 1 buffer and 15 integers, sub-buffers as arguments, 264
//                   work-groups instead of one, kernels of 40 KiB of local memory alone and
//                   alternating with ones of none, work-groups of 64 and 1024 alternating,
//                   an out-of-order queue whose launches each wait for the one before, and
//                   the add again with 2000 more buffers alive in the context; and where
//                   the device has coarse-grained SVM, the kernels' pointers as SVM pointers
//                   (clSetKernelArgSVMPointer) and buffer objects over SVM allocations
//   gated           the device's own cost per launch: 200 launches enqueued behind a gate, then
//                   run back to back, timed by their profiling events; the gate a user event,
//                   a long kernel of another queue (waited for by a barrier, or in the first
//                   launch's wait list, as a texel run waits for a caller's events)
// All times are per launch, in microseconds.
// Usage: texel_launch_bench [--device gpu|cpu] [--launches N]
#include <CL/cl.h>

#include <algorithm>
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
__kernel void noargs() {}
__kernel void args16(__global float* a0, __global float* a1, __global float* a2,
                     __global float* a3, __global float* a4, __global float* a5,
                     __global float* a6, __global float* a7, __global float* a8,
                     __global float* a9, __global float* a10, __global float* a11,
                     __global float* a12, __global float* a13, __global float* a14,
                     __global float* a15) {}
__kernel void scalars15(__global float* a, long o1, long o2, long o3, long o4, long o5, long o6,
                        long o7, long o8, long o9, long o10, long o11, long o12, long o13,
                        long o14, long o15) {}
__kernel void local40k(__global float* x) {
  __local float s[10240];
  const int l = get_local_id(0);
  s[l * 97 % 10240] = l;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (s[(l + 1) * 89 % 10240] == -1.0f) x[0] = 1.0f;
}
__kernel void spin(__global float* x, int iters) {
  float v = x[0];
  for (int i = 0; i < iters; ++i) v = v * 1.0000001f + 1e-7f;
  if (v == -1.0f) x[0] = v;
}
__kernel void add(__global const float* a, __global const float* b, __global float* y) {
  const int i = get_global_id(0);
  y[i] = a[i] + b[i];
})";

double Now() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Per launch, in microseconds, from finished commands' profiling events (released here): from the
// first start to the last end, each one's start -> end, and the gap from one end to the next start.
struct EventTimes {
  double span = 0, busy = 0, gap = 0;
};
EventTimes TimesOf(std::vector<cl_event>& ev) {
  EventTimes t;
  cl_ulong first = 0, prev_end = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    cl_ulong s = 0, e = 0;
    clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_START, sizeof s, &s, nullptr);
    clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_END, sizeof e, &e, nullptr);
    if (i == 0) first = s;
    t.busy += static_cast<double>(e - s) * 1e-3;
    if (i > 0) t.gap += (static_cast<double>(s) - static_cast<double>(prev_end)) * 1e-3;
    prev_end = e;
    clReleaseEvent(ev[i]);
  }
  const double m = static_cast<double>(ev.size());
  t.span = static_cast<double>(prev_end - first) * 1e-3 / m;
  t.busy /= m;
  t.gap /= m - 1;
  return t;
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
  auto kernel = [&](const char* kernel_name) {
    cl_kernel k = clCreateKernel(prog, kernel_name, &err);
    Check(err, "clCreateKernel");
    return k;
  };
  const size_t elems = 128 * 768;
  cl_mem buf[3];
  for (cl_mem& b : buf) {
    b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, elems * sizeof(float), nullptr, &err);
    Check(err, "clCreateBuffer");
  }
  cl_kernel empty = kernel("empty");
  cl_kernel add = kernel("add");
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
    EventTimes et = TimesOf(ev);
    std::printf("%-12s profiled      start->end %7.2f  end->next start %7.2f\n", label, et.busy,
                et.gap);
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
  // Probes: what the cost of a launch depends on.
  auto steady = [&](const char* label, cl_command_queue q, const std::vector<Launch>& ls) {
    for (int i = 0; i < 20; ++i) enqueue(q, ls[i % ls.size()], nullptr);
    clFinish(q);
    double t0 = Now();
    for (int i = 0; i < n; ++i) enqueue(q, ls[i % ls.size()], nullptr);
    double t1 = Now();
    clFinish(q);
    std::printf("probe %-34s enqueue %7.2f  total %7.2f\n", label, (t1 - t0) / n, (Now() - t0) / n);
  };
  {
    // The first 16 enqueues onto an idle device, 50 times.
    const Launch l{empty, 64, 64};
    double first = 0, rest = 0;
    for (int r = 0; r < 50; ++r) {
      clFinish(in_order);
      double t0 = Now();
      enqueue(in_order, l, nullptr);
      double t1 = Now();
      for (int i = 1; i < 16; ++i) enqueue(in_order, l, nullptr);
      double t2 = Now();
      first += t1 - t0, rest += (t2 - t1) / 15;
    }
    clFinish(in_order);
    std::printf("probe %-34s first %7.2f  next 15 %7.2f\n", "idle device, empty", first / 50,
                rest / 50);
  }
  cl_kernel noargs = kernel("noargs");
  cl_kernel args16 = kernel("args16");
  cl_kernel local40k = kernel("local40k");
  std::vector<cl_mem> many(16);
  for (cl_mem& b : many) {
    b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, nullptr, &err);
    Check(err, "clCreateBuffer");
  }
  for (cl_uint a = 0; a < 16; ++a)
    Check(clSetKernelArg(args16, a, sizeof(cl_mem), &many[a]), "arg");
  Check(clSetKernelArg(local40k, 0, sizeof(cl_mem), &buf[0]), "arg");
  cl_kernel empty2 = kernel("empty");
  Check(clSetKernelArg(empty2, 0, sizeof(cl_mem), &buf[1]), "arg");
  steady("empty (1 buffer argument)", in_order, {Launch{empty, 64, 64}});
  steady("no arguments", in_order, {Launch{noargs, 64, 64}});
  steady("16 buffer arguments", in_order, {Launch{args16, 64, 64}});
  {
    // The same 16 parameters all naming one buffer; one buffer and 15 integers: whether the
    // cost is per buffer parameter or per distinct buffer, and what scalars cost.
    cl_kernel same16 = kernel("args16");
    for (cl_uint a = 0; a < 16; ++a)
      Check(clSetKernelArg(same16, a, sizeof(cl_mem), &many[0]), "arg");
    steady("16 buffer arguments, one buffer", in_order, {Launch{same16, 64, 64}});
    cl_kernel scalars = kernel("scalars15");
    Check(clSetKernelArg(scalars, 0, sizeof(cl_mem), &many[0]), "arg");
    for (cl_uint a = 1; a < 16; ++a) {
      cl_long v = 4 * a;
      Check(clSetKernelArg(scalars, a, sizeof v, &v), "arg");
    }
    steady("1 buffer and 15 integer arguments", in_order, {Launch{scalars, 64, 64}});
    clReleaseKernel(same16);
    clReleaseKernel(scalars);
  }
  // The device's own cost per launch, the host out of the way: the launches wait behind a gate
  // until all are enqueued, then run back to back; from the first start to the last end per
  // launch, each one's start -> end, and the gap from one end to the next start. The gate: a
  // user event (GATE_USER), a long kernel on another queue waited for by a barrier
  // (GATE_DEVICE), or that kernel's event in the first launch's own wait list, as a run of
  // texel's waits for the events a caller hands in (GATE_FIRST).
  enum Gate { GATE_USER, GATE_DEVICE, GATE_FIRST };
  cl_kernel spin = kernel("spin");
  Check(clSetKernelArg(spin, 0, sizeof(cl_mem), &buf[2]), "arg");
  const cl_int spin_iters = 2000000;
  Check(clSetKernelArg(spin, 1, sizeof spin_iters, &spin_iters), "arg");
  auto gated = [&](const char* label, const std::vector<Launch>& ls, Gate kind = GATE_USER) {
    const int m = std::min(n, 200);
    for (int i = 0; i < 20; ++i) enqueue(profiled, ls[i % ls.size()], nullptr);
    clFinish(profiled);
    cl_event gate = nullptr;
    if (kind == GATE_USER) {
      gate = clCreateUserEvent(ctx, &err);
      Check(err, "clCreateUserEvent");
    } else {
      const size_t one = 1;
      Check(clEnqueueNDRangeKernel(second, spin, 1, nullptr, &one, &one, 0, nullptr, &gate),
            "clEnqueueNDRangeKernel(spin)");
      clFlush(second);
    }
    if (kind != GATE_FIRST)
      Check(clEnqueueBarrierWithWaitList(profiled, 1, &gate, nullptr), "clEnqueueBarrier");
    std::vector<cl_event> ev(m);
    for (int i = 0; i < m; ++i) {
      const Launch& l = ls[i % ls.size()];
      const bool wait = kind == GATE_FIRST && i == 0;
      Check(clEnqueueNDRangeKernel(profiled, l.kernel, 1, nullptr, &l.global, &l.local,
                                   wait ? 1 : 0, wait ? &gate : nullptr, &ev[i]),
            "clEnqueueNDRangeKernel");
    }
    // A gate already open (the long kernel done before the last enqueue) would leave the host
    // as the bound again: say so.
    cl_int open = CL_QUEUED;
    clGetEventInfo(gate, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof open, &open, nullptr);
    double t0 = Now();
    if (kind == GATE_USER) Check(clSetUserEventStatus(gate, CL_COMPLETE), "clSetUserEventStatus");
    clFinish(profiled);
    double t1 = Now();
    EventTimes et = TimesOf(ev);
    clReleaseEvent(gate);
    std::printf("gated %-40s span %7.2f  start->end %7.2f  gap %7.2f  host wait %7.2f%s\n", label,
                et.span, et.busy, et.gap, kind == GATE_USER ? (t1 - t0) / m : 0.0,
                open == CL_COMPLETE ? "  (the gate opened before the last enqueue)" : "");
  };
  gated("empty (1 buffer argument)", {Launch{empty, 64, 64}});
  gated("no arguments", {Launch{noargs, 64, 64}});
  gated("16 buffer arguments", {Launch{args16, 64, 64}});
  gated("empty, 264 work-groups of 256", {Launch{empty, 264 * 256, 256}});
  gated("add 128x768", {Launch{add, elems, 256}});
  gated("40 KiB local / none alternating", {Launch{local40k, 64, 64}, Launch{empty2, 64, 64}});
  gated("empty, behind a kernel of another queue", {Launch{empty, 64, 64}}, GATE_DEVICE);
  gated("add, behind a kernel of another queue", {Launch{add, elems, 256}}, GATE_DEVICE);
  gated("empty, the first waiting for that kernel", {Launch{empty, 64, 64}}, GATE_FIRST);
  gated("add, the first waiting for that kernel", {Launch{add, elems, 256}}, GATE_FIRST);
  steady("empty, 264 work-groups of 256", in_order, {Launch{empty, 264 * 256, 256}});
  steady("empty, two kernels alternating", in_order,
         {Launch{empty, 64, 64}, Launch{empty2, 64, 64}});
  steady("40 KiB local memory", in_order, {Launch{local40k, 64, 64}});
  steady("40 KiB local / none alternating", in_order,
         {Launch{local40k, 64, 64}, Launch{empty2, 64, 64}});
  steady("work-groups 64 / 1024 alternating", in_order,
         {Launch{empty, 64, 64}, Launch{empty2, 1024, 1024}});
  {
    // Sub-buffers as the add's arguments.
    cl_kernel sub_add = kernel("add");
    cl_mem whole = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4 * elems * sizeof(float), nullptr, &err);
    Check(err, "clCreateBuffer");
    for (cl_uint a = 0; a < 3; ++a) {
      cl_buffer_region r{a * elems * sizeof(float), elems * sizeof(float)};
      cl_mem s =
          clCreateSubBuffer(whole, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
      Check(err, "clCreateSubBuffer");
      Check(clSetKernelArg(sub_add, a, sizeof(cl_mem), &s), "arg");
    }
    steady("add 128x768, buffers", in_order, {Launch{add, elems, 256}});
    steady("add 128x768, sub-buffers", in_order, {Launch{sub_add, elems, 256}});
  }
  if (ooo) {
    // Out of order, each launch waiting for the one before.
    const Launch l{empty, 64, 64};
    cl_event prev = nullptr;
    double t0 = Now();
    for (int i = 0; i < n; ++i) {
      cl_event ev;
      Check(clEnqueueNDRangeKernel(ooo, l.kernel, 1, nullptr, &l.global, &l.local, prev ? 1 : 0,
                                   prev ? &prev : nullptr, &ev),
            "clEnqueueNDRangeKernel");
      if (prev) clReleaseEvent(prev);
      prev = ev;
    }
    double t1 = Now();
    clFinish(ooo);
    clReleaseEvent(prev);
    std::printf("probe %-34s enqueue %7.2f  total %7.2f\n", "out of order, chained events",
                (t1 - t0) / n, (Now() - t0) / n);
  }
  {
    // Shared virtual memory (coarse-grained buffers) instead of buffer objects: the same
    // kernels with their pointers set by clSetKernelArgSVMPointer, to separate allocations and
    // into one; and buffer objects made over an SVM allocation (CL_MEM_USE_HOST_PTR).
    cl_device_svm_capabilities svm = 0;
    clGetDeviceInfo(device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, nullptr);
    if (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) {
      std::vector<void*> ptrs(16);
      for (void*& p : ptrs) {
        p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, elems * sizeof(float), 0);
        if (!p) Check(CL_OUT_OF_RESOURCES, "clSVMAlloc");
      }
      char* whole = static_cast<char*>(clSVMAlloc(ctx, CL_MEM_READ_WRITE, 16 * 4096, 0));
      if (!whole) Check(CL_OUT_OF_RESOURCES, "clSVMAlloc");
      cl_kernel svm16 = kernel("args16");
      cl_kernel svm16one = kernel("args16");
      cl_kernel svm_add = kernel("add");
      cl_kernel svm1 = kernel("empty");
      cl_kernel wrapped16 = kernel("args16");
      for (cl_uint a = 0; a < 16; ++a) {
        Check(clSetKernelArgSVMPointer(svm16, a, ptrs[a]), "clSetKernelArgSVMPointer");
        Check(clSetKernelArgSVMPointer(svm16one, a, whole + a * 4096), "clSetKernelArgSVMPointer");
        cl_mem w = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                                  elems * sizeof(float), ptrs[a], &err);
        Check(err, "clCreateBuffer(USE_HOST_PTR over SVM)");
        Check(clSetKernelArg(wrapped16, a, sizeof(cl_mem), &w), "arg");
      }
      for (cl_uint a = 0; a < 3; ++a)
        Check(clSetKernelArgSVMPointer(svm_add, a, ptrs[a]), "clSetKernelArgSVMPointer");
      Check(clSetKernelArgSVMPointer(svm1, 0, ptrs[0]), "clSetKernelArgSVMPointer");
      steady("empty, 1 SVM pointer", in_order, {Launch{svm1, 64, 64}});
      steady("16 SVM pointers", in_order, {Launch{svm16, 64, 64}});
      steady("16 SVM pointers into one allocation", in_order, {Launch{svm16one, 64, 64}});
      steady("16 buffers over SVM allocations", in_order, {Launch{wrapped16, 64, 64}});
      steady("add 128x768, buffers (again)", in_order, {Launch{add, elems, 256}});
      steady("add 128x768, SVM pointers", in_order, {Launch{svm_add, elems, 256}});
    } else {
      std::printf("probe %-34s\n", "no coarse-grained SVM");
    }
  }
  {
    std::vector<cl_mem> crowd(2000);
    for (cl_mem& b : crowd) {
      b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 65536, nullptr, &err);
      Check(err, "clCreateBuffer");
    }
    // Touch them once so that the driver has them resident.
    for (cl_mem b : crowd) {
      Check(clSetKernelArg(empty2, 0, sizeof(cl_mem), &b), "arg");
      enqueue(in_order, Launch{empty2, 64, 64}, nullptr);
    }
    clFinish(in_order);
    steady("add 128x768, 2000 more buffers", in_order, {Launch{add, elems, 256}});
  }
  return 0;
}
