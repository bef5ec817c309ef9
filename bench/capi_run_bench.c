/* texel_capi_run_bench MODEL [RUNS] [WARMUP]: the C API's run latency, the baseline that
 * bench/python_overhead.py holds the Python package against. Loads an artifact (or compiles a
 * model), binds host memory to every input (random floats) and output once, then times RUNS
 * calls of texel_session_run after WARMUP untimed ones; prints each run's milliseconds, one per
 * line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <texel/texel.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int check(texel_status_t s) {
  if (s != TEXEL_OK) {
    fprintf(stderr, "texel_capi_run_bench: %s\n", texel_last_error());
    exit(1);
  }
  return 0;
}

static int is_artifact(const char* path) {
  char magic[8] = {0};
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(magic, 1, sizeof magic, f);
  fclose(f);
  return n == sizeof magic && memcmp(magic, "TEXELART", sizeof magic) == 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: texel_capi_run_bench MODEL [RUNS] [WARMUP]\n");
    return 2;
  }
  int runs = argc > 2 ? atoi(argv[2]) : 100, warmup = argc > 3 ? atoi(argv[3]) : 5;
  texel_context_t ctx;
  check(texel_context_create(NULL, &ctx));
  texel_model_t model;
  if (is_artifact(argv[1]))
    check(texel_model_load_file(ctx, argv[1], &model));
  else
    check(texel_model_compile_file(ctx, argv[1], NULL, &model));
  texel_session_t session;
  check(texel_session_create(model, &session));
  size_t counts[2];
  check(texel_model_input_count(model, &counts[0]));
  check(texel_model_output_count(model, &counts[1]));
  for (int output = 0; output < 2; ++output) {
    for (size_t i = 0; i < counts[output]; ++i) {
      texel_tensor_info_t info;
      check(output ? texel_model_get_output(model, i, &info)
                   : texel_model_get_input(model, i, &info));
      unsigned char* memory = malloc(info.bytes ? info.bytes : 1); /* kept until exit */
      for (size_t b = 0; b < info.bytes; ++b) memory[b] = (unsigned char)rand();
      if (!output && info.dtype == TEXEL_DTYPE_F32)
        for (size_t e = 0; e < info.bytes / 4; ++e)
          ((float*)memory)[e] = (float)rand() / RAND_MAX - 0.5f;
      texel_tensor_t t;
      texel_tensor_init(&t);
      t.kind = TEXEL_MEMORY_HOST;
      t.pointer = memory;
      t.bytes = info.bytes;
      check(output ? texel_session_bind_output(session, info.name, &t)
                   : texel_session_bind_input(session, info.name, &t));
    }
  }
  for (int i = 0; i < warmup; ++i) check(texel_session_run(session));
  for (int i = 0; i < runs; ++i) {
    double start = now_ms();
    check(texel_session_run(session));
    printf("%.4f\n", now_ms() - start);
  }
  texel_session_release(session);
  texel_model_release(model);
  texel_context_release(ctx);
  return 0;
}
