/* A C99 program against texel.h: compiles the fragment given as argv[1] (or loads its artifact,
 * built with TEXEL_RUNTIME_ONLY) (matmul_add.mlir:
 * arg2 = arg0 x arg1 + arg0, 64x128 by 128x128), runs it on texel's own context with host memory,
 * then on an adopted context and queue with cl_mem buffers through texel_session_enqueue, and
 * checks both against a reference computed here. Exits 0 when all agree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <texel/texel.h>

enum { M = 64, K = 128, N = 128 };

static int failures = 0;

static int check(texel_status_t status, const char* what) {
  if (status == TEXEL_OK) return 1;
  fprintf(stderr, "%s: %s: %s\n", what, texel_status_name(status), texel_last_error());
  ++failures;
  return 0;
}

static double rel_error(const float* got, const double* want, int n) {
  double err = 0, norm = 0;
  int i;
  for (i = 0; i < n; ++i) {
    err += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return sqrt(err / norm);
}

/* The model: compiled from the fragment, or (built with TEXEL_RUNTIME_ONLY, against
 * libtexel_runtime.so) loaded from an artifact of it. */
static texel_status_t open_model(texel_context_t context, const char* path, texel_model_t* out) {
#ifdef TEXEL_RUNTIME_ONLY
  return texel_model_load_file(context, path, out);
#else
  return texel_model_compile_file(context, path, NULL, out);
#endif
}

static texel_tensor_t host_tensor(void* p, size_t bytes) {
  texel_tensor_t t;
  texel_tensor_init(&t);
  t.kind = TEXEL_MEMORY_HOST;
  t.pointer = p;
  t.bytes = bytes;
  return t;
}

static texel_tensor_t buffer_tensor(cl_mem m) {
  texel_tensor_t t;
  texel_tensor_init(&t);
  t.kind = TEXEL_MEMORY_CL_BUFFER;
  t.buffer = m;
  return t;
}

int main(int argc, char** argv) {
  static float a[M * K], b[K * N], c[M * N], c2[M * N];
  static double want[M * N];
  texel_context_t own = NULL, adopted = NULL;
  texel_model_t model = NULL, model2 = NULL;
  texel_session_t session = NULL, session2 = NULL;
  texel_tensor_t ta, tb, tc;
  texel_device_info_t info;
  size_t count = 0;
  int i, j, k;
  unsigned seed = 12345u;

  if (argc != 2) {
    fprintf(stderr, "usage: %s FRAGMENT.mlir (or, runtime only, its FRAGMENT.texel)\n", argv[0]);
    return 2;
  }
  for (i = 0; i < M * K; ++i)
    a[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
  for (i = 0; i < K * N; ++i)
    b[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
  for (i = 0; i < M; ++i)
    for (j = 0; j < N; ++j) {
      double s = a[i * K + j];
      for (k = 0; k < K; ++k) s += (double)a[i * K + k] * b[k * N + j];
      want[i * N + j] = s;
    }

  /* texel's own context, host memory. */
  if (!check(texel_device_count(&count), "texel_device_count") || count == 0) return 1;
  if (!check(texel_context_create(NULL, &own), "texel_context_create")) return 1;
  check(texel_context_get_device_info(own, &info), "texel_context_get_device_info");
  printf("device  %s\n", info.label);
  if (!check(open_model(own, argv[1], &model), "compile")) return 1;
  check(texel_session_create(model, &session), "texel_session_create");
  ta = host_tensor(a, sizeof(a));
  tb = host_tensor(b, sizeof(b));
  tc = host_tensor(c, sizeof(c));
  check(texel_session_bind_input(session, "arg0", &ta), "bind arg0");
  check(texel_session_bind_input(session, "arg1", &tb), "bind arg1");
  check(texel_session_bind_output(session, "arg2", &tc), "bind arg2");
  check(texel_session_run(session), "texel_session_run");
  printf("own context, host memory: rel. error %.3g\n", rel_error(c, want, M * N));
  if (rel_error(c, want, M * N) > 1e-5) ++failures;

  /* A bad call: a status and a message, nothing else. */
  if (texel_session_run(NULL) != TEXEL_ERROR_INVALID_ARGUMENT ||
      strstr(texel_last_error(), "session is NULL") == NULL) {
    fprintf(stderr, "texel_session_run(NULL) did not fail as it should: %s\n", texel_last_error());
    ++failures;
  }

  /* An adopted context and queue, cl_mem buffers, an enqueued run and its event. */
  {
    cl_device_id device = info.device;
    cl_int err = CL_SUCCESS;
    cl_context cl_ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueueWithProperties(cl_ctx, device, NULL, &err);
    cl_mem ma = clCreateBuffer(cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(a), a, &err);
    cl_mem mb = clCreateBuffer(cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(b), b, &err);
    cl_mem mc = clCreateBuffer(cl_ctx, CL_MEM_READ_WRITE, sizeof(c2), NULL, &err);
    cl_event done = NULL;
    if (check(texel_context_adopt(cl_ctx, device, queue, &adopted), "texel_context_adopt") &&
        check(open_model(adopted, argv[1], &model2), "compile (adopted)") &&
        check(texel_session_create(model2, &session2), "texel_session_create (adopted)")) {
      ta = buffer_tensor(ma);
      tb = buffer_tensor(mb);
      tc = buffer_tensor(mc);
      check(texel_session_bind_input(session2, "arg0", &ta), "bind arg0 (cl_mem)");
      check(texel_session_bind_input(session2, "arg1", &tb), "bind arg1 (cl_mem)");
      check(texel_session_bind_output(session2, "arg2", &tc), "bind arg2 (cl_mem)");
      if (check(texel_session_enqueue(session2, 0, NULL, &done), "texel_session_enqueue")) {
        clEnqueueReadBuffer(queue, mc, CL_TRUE, 0, sizeof(c2), c2, 1, &done, NULL);
        clReleaseEvent(done);
        printf("adopted queue, cl_mem: rel. error %.3g\n", rel_error(c2, want, M * N));
        if (memcmp(c, c2, sizeof(c)) != 0) {
          fprintf(stderr, "the adopted run differs from the plain run\n");
          ++failures;
        }
      }
    }
    texel_session_release(session2);
    texel_model_release(model2);
    texel_context_release(adopted);
    clReleaseMemObject(ma);
    clReleaseMemObject(mb);
    clReleaseMemObject(mc);
    clReleaseCommandQueue(queue);
    clReleaseContext(cl_ctx);
  }

  texel_session_release(session);
  texel_model_release(model);
  texel_context_release(own);
  printf("%s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
