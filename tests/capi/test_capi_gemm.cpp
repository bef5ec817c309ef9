// texel_gemm through the public C and C++ API on a host's context, queue and buffers: row- and
// column-major, transposes, leading dimensions past the row, offsets, strided batches, alpha and
// beta, f32 and f16 storage, ordered by the host's events; each result against a double
// precision host reference. Then every bad argument: a status and a message naming it.
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "host_framework.h"

namespace texel_test {
namespace {

// f16 bits of a float that f16 holds exactly (|x| in [2^-14, 65504] or 0), and any f16 back.
uint16_t ExactHalf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) == 0) return static_cast<uint16_t>(u >> 16);
  uint32_t sign = (u >> 16) & 0x8000u, exp = ((u >> 23) & 0xffu) - 127 + 15;
  return static_cast<uint16_t>(sign | (exp << 10) | ((u >> 13) & 0x3ffu));
}
float HalfValue(uint16_t h) {
  float mant = static_cast<float>(h & 0x3ffu), v;
  int exp = (h >> 10) & 0x1f;
  v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024.0f + mant, exp - 25);
  return h & 0x8000u ? -v : v;
}

struct Case {
  texel_layout_t layout;
  int ta, tb;
  texel_dtype_t dtype;
};

// C (stored per layout) = alpha op(A) op(B) + beta C for random A, B, C; returns the worst error
// relative to sum |alpha a b| + |beta c|.
double RunCase(HostFramework& host, const texel::Context& ctx, const Case& cs, size_t k = 37,
               size_t batch = 2, cl_command_queue queue = nullptr) {
  if (!queue) queue = host.queue;
  const size_t m = 19, n = 23;
  bool col = cs.layout == TEXEL_COL_MAJOR, half = cs.dtype == TEXEL_DTYPE_F16;
  // Stored shapes (rows x cols of memory order) of A, B, C.
  auto stored = [&](size_t r, size_t c, int trans) {
    if (trans) std::swap(r, c);
    return col ? std::pair{c, r} : std::pair{r, c};
  };
  auto [ar, ac] = stored(m, k, cs.ta);
  auto [br, bc] = stored(k, n, cs.tb);
  auto [cr, cc] = stored(m, n, 0);
  texel::Gemm g;
  texel_gemm_t& d = g.desc;
  d.layout = cs.layout, d.trans_a = cs.ta, d.trans_b = cs.tb, d.m = m, d.n = n, d.k = k;
  d.alpha = 0.5f, d.beta = -2.0f, d.batch = batch, d.dtype = cs.dtype;
  d.lda = ac + 3, d.ldb = bc, d.ldc = cc + 1;
  d.a_offset = 8, d.b_offset = 0, d.c_offset = 4;
  d.stride_a = ar * d.lda + 5, d.stride_b = br * d.ldb, d.stride_c = cr * d.ldc;
  size_t na = d.a_offset + batch * d.stride_a, nb = batch * d.stride_b,
         nc = d.c_offset + batch * d.stride_c;
  // Multiples of 1/32 in [-1, 1]: exact in f16.
  std::mt19937 rng(5);
  auto values = [&](size_t count) {
    std::vector<float> v(count);
    for (float& x : v) x = static_cast<float>(static_cast<int>(rng() % 65) - 32) / 32.0f;
    return v;
  };
  std::vector<float> a = values(na), b = values(nb), c = values(nc);
  auto upload = [&](const std::vector<float>& v) {
    size_t eb = half ? 2 : 4;
    cl_mem mem = host.Buffer(v.size() * eb);
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = ExactHalf(v[i]);
    EXPECT_EQ(clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, v.size() * eb,
                                   half ? static_cast<const void*>(h.data()) : v.data(), 0, nullptr,
                                   nullptr),
              CL_SUCCESS);
    return mem;
  };
  d.a = upload(a), d.b = upload(b), d.c = upload(c);
  cl_event done = g.Enqueue(ctx, queue, {}, true);
  EXPECT_EQ(clWaitForEvents(1, &done), CL_SUCCESS);
  clReleaseEvent(done);
  std::vector<float> got(nc);
  if (half) {
    std::vector<uint16_t> h(nc);
    EXPECT_EQ(clEnqueueReadBuffer(queue, d.c, CL_TRUE, 0, nc * 2, h.data(), 0, nullptr, nullptr),
              CL_SUCCESS);
    for (size_t i = 0; i < nc; ++i) got[i] = HalfValue(h[i]);
  } else {
    got = host.Read(d.c, nc);
  }
  // Element (r, c) of a stored matrix at ld: row-major r * ld + c, column-major c * ld + r.
  auto at = [&](size_t r, size_t cl, size_t ld) { return col ? cl * ld + r : r * ld + cl; };
  double worst = 0;
  for (size_t bi = 0; bi < batch; ++bi)
    for (size_t i = 0; i < m; ++i)
      for (size_t j = 0; j < n; ++j) {
        double sum = 0, scale = 0;
        for (size_t q = 0; q < k; ++q) {
          double x = a[d.a_offset + bi * d.stride_a + (cs.ta ? at(q, i, d.lda) : at(i, q, d.lda))];
          double y = b[bi * d.stride_b + (cs.tb ? at(j, q, d.ldb) : at(q, j, d.ldb))];
          sum += x * y;
          scale += std::fabs(x * y);
        }
        size_t ci = d.c_offset + bi * d.stride_c + at(i, j, d.ldc);
        double want = 0.5 * sum - 2.0 * c[ci];
        worst = std::max(worst,
                         std::fabs(got[ci] - want) / (0.5 * scale + 2 * std::fabs(c[ci]) + 1e-30));
      }
  EXPECT_EQ(got[0], c[0]) << "C before its offset was written";
  return worst;
}

TEST(CApiGemm, LayoutsTransposesAndStorage) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  for (Case cs :
       {Case{TEXEL_ROW_MAJOR, 0, 0, TEXEL_DTYPE_F32}, Case{TEXEL_ROW_MAJOR, 1, 1, TEXEL_DTYPE_F16},
        Case{TEXEL_COL_MAJOR, 0, 1, TEXEL_DTYPE_F32},
        Case{TEXEL_COL_MAJOR, 1, 0, TEXEL_DTYPE_F16}}) {
    double tol = cs.dtype == TEXEL_DTYPE_F16 ? 1e-3 : 1e-6;  // f16: C rounded on the way out
    EXPECT_LT(RunCase(host, ctx, cs), tol)
        << (cs.layout == TEXEL_COL_MAJOR ? "col" : "row") << " ta " << cs.ta << " tb " << cs.tb
        << " f16 " << (cs.dtype == TEXEL_DTYPE_F16);
  }
}

// Deep K over one tile: split over more work-groups where the device's can hand results over
// (PoCL's CPU device, with more compute units than the problem has tiles), their slices added
// up by the last. Twice in a row, so that arrival counters left set would show. The values (k
// products of multiples of 1/32) add up exactly in f32.
TEST(CApiGemm, DeepProducts) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  for (int run = 0; run < 2; ++run) {
    EXPECT_LT(RunCase(host, ctx, Case{TEXEL_ROW_MAJOR, 0, 1, TEXEL_DTYPE_F32}, 1600, 1), 1e-7);
    EXPECT_LT(RunCase(host, ctx, Case{TEXEL_COL_MAJOR, 1, 0, TEXEL_DTYPE_F16}, 1600, 1), 1e-3);
  }
}

// Deep products split on four threads at once, each on a queue of its own (texel keeps a split's
// scratch per queue): every result exact. Run under ThreadSanitizer by scripts/tsan.sh.
TEST(CApiGemm, DeepProductsOnThreadsAndQueues) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  double worst[4] = {1, 1, 1, 1};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      cl_int err = CL_SUCCESS;
      cl_command_queue q =
          clCreateCommandQueueWithProperties(host.context, host.device, nullptr, &err);
      ASSERT_EQ(err, CL_SUCCESS);
      worst[t] =
          RunCase(host, ctx, Case{TEXEL_ROW_MAJOR, t & 1, t >> 1, TEXEL_DTYPE_F32}, 1600, 1, q);
      clReleaseCommandQueue(q);
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_LT(worst[t], 1e-7) << "thread " << t;
}

// texel_gemm from several threads on one context and queue at once, each a shape class of its
// own (so that the context's kernel cache builds and looks up kernels from every thread):
// every result right. Run under ThreadSanitizer by scripts/tsan.sh.
TEST(CApiGemm, ThreadsShareOneContext) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  const Case cases[] = {{TEXEL_ROW_MAJOR, 0, 1, TEXEL_DTYPE_F32},
                        {TEXEL_COL_MAJOR, 1, 1, TEXEL_DTYPE_F32},
                        {TEXEL_ROW_MAJOR, 1, 0, TEXEL_DTYPE_F16},
                        {TEXEL_COL_MAJOR, 0, 0, TEXEL_DTYPE_F16}};
  double worst[4] = {1, 1, 1, 1};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] { worst[t] = RunCase(host, ctx, cases[t]); });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_LT(worst[t], cases[t].dtype == TEXEL_DTYPE_F16 ? 1e-3 : 1e-6) << "thread " << t;
}

// The product waits for the host's write of A (an event of the host's kernel), and the host's
// next kernel waits for the product's event.
TEST(CApiGemm, OrderedByEvents) {
  HostFramework host;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  const size_t n = 16;
  cl_mem a = host.Buffer(n * n * 4), b = host.Buffer(n * n * 4), c = host.Buffer(n * n * 4),
         c2 = host.Buffer(n * n * 4);
  std::vector<float> identity(n * n, 0.0f);
  for (size_t i = 0; i < n; ++i) identity[i * n + i] = 1.0f;
  host.Write(b, identity);
  cl_event filled = host.Fill(a, 7, n * n);
  texel::Gemm g;
  g.desc.m = g.desc.n = g.desc.k = n;
  g.desc.lda = g.desc.ldb = g.desc.ldc = n;
  g.desc.a = a, g.desc.b = b, g.desc.c = c;
  cl_event done = g.Enqueue(ctx, nullptr, {filled}, true);
  cl_event scaled = host.Scale(c, c2, 3.0f, n * n, {done});
  EXPECT_EQ(clWaitForEvents(1, &scaled), CL_SUCCESS);
  std::vector<float> want = host.Read(a, n * n);
  for (float& x : want) x *= 3.0f;
  EXPECT_EQ(host.Read(c2, n * n), want);
  for (cl_event e : {filled, done, scaled}) clReleaseEvent(e);
}

TEST(CApiGemm, BadArguments) {
  HostFramework host, other;
  texel::Context ctx = texel::Context::Adopt(host.context, host.device, host.queue);
  cl_mem buf = host.Buffer(64 * 4);
  texel_gemm_t ok;
  texel_gemm_init(&ok);
  ok.m = ok.n = ok.k = 8, ok.lda = ok.ldb = ok.ldc = 8, ok.a = ok.b = ok.c = buf;
  ASSERT_EQ(texel_gemm(ctx.get(), &ok, nullptr, 0, nullptr, nullptr), TEXEL_OK)
      << texel_last_error();
  auto expect = [&](const texel_gemm_t& g, texel_status_t status, const char* needle,
                    cl_command_queue queue = nullptr, cl_uint nwait = 0) {
    EXPECT_EQ(texel_gemm(ctx.get(), &g, queue, nwait, nullptr, nullptr), status) << needle;
    EXPECT_NE(std::strstr(texel_last_error(), needle), nullptr) << texel_last_error();
  };
  texel_gemm_t g = ok;
  g.lda = 4;
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "lda = 4");
  g = ok, g.layout = TEXEL_COL_MAJOR, g.ldb = 7;  // column-major B: ldb covers its k rows
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "ldb = 7");
  g = ok, g.k = 9, g.lda = 9;
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "a holds 256 bytes");
  g = ok, g.batch = 2, g.stride_c = 64;
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "c holds 256 bytes");
  g = ok, g.m = static_cast<size_t>(1) << 40;
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "past 2^30");
  g = ok, g.batch = 2, g.stride_a = static_cast<size_t>(1) << 62;  // wraps in 64 bits
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "a holds 256 bytes");
  g = ok, g.batch = 2, g.stride_c = 0;  // both entries would write one C
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "stride_c = 0");
  g = ok, g.batch = 70000;
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "batch = 70000");
  g = ok, g.dtype = TEXEL_DTYPE_I32;
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "dtype");
  g = ok, g.compute = static_cast<texel_compute_t>(9);
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "compute 9");
  g = ok, g.layout = static_cast<texel_layout_t>(5);
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "layout 5");
  g = ok, g.c = nullptr;
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "c is NULL");
  g = ok, g.struct_size = 0;
  expect(g, TEXEL_ERROR_INVALID_ARGUMENT, "texel_gemm_init");
  expect(ok, TEXEL_ERROR_INVALID_ARGUMENT, "another context", other.queue);
  expect(ok, TEXEL_ERROR_INVALID_ARGUMENT, "wait_events is NULL", nullptr, 1);
  EXPECT_EQ(texel_gemm(nullptr, &ok, nullptr, 0, nullptr, nullptr), TEXEL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(texel_gemm(ctx.get(), nullptr, nullptr, 0, nullptr, nullptr),
            TEXEL_ERROR_INVALID_ARGUMENT);
  // A matrix-engine mode on a device without one (PoCL's CPU).
  std::string type = ctx.device().type;
  if (type == "CPU") {
    g = ok, g.compute = TEXEL_COMPUTE_TF32;
    expect(g, TEXEL_ERROR_UNSUPPORTED, "tf32 needs a matrix engine");
  }
  // Nothing to compute: no error, and the event completes.
  g = ok, g.m = 0, g.a = g.b = g.c = nullptr;
  cl_event e = nullptr;
  EXPECT_EQ(texel_gemm(ctx.get(), &g, nullptr, 0, nullptr, &e), TEXEL_OK) << texel_last_error();
  EXPECT_EQ(clWaitForEvents(1, &e), CL_SUCCESS);
  clReleaseEvent(e);
}

}  // namespace
}  // namespace texel_test
