/* texel C API: compile a model (ONNX, or an MLIR linalg fragment) for an OpenCL device, or load
 * one compiled before (a .texel artifact), and run it, on texel's own context and queue or on a
 * host framework's, reading and writing the host's memory in place.
 *
 * Conventions: every function returns a texel_status_t (TEXEL_OK on success); results come back
 * through out_ parameters, which are left untouched on failure. texel_last_error() gives the
 * message of the calling thread's last failure. Handles are reference counted: a create, adopt or
 * compile function returns a handle holding one reference; _retain adds one, _release drops one,
 * and the object goes when none is left (a model keeps its context, a session its model). Input
 * structs (options, tensors) are filled by their _init() function before fields are set; their
 * struct_size lets later versions add fields at the end. A model whose output has a
 * data-dependent row count (NonZero and the like) cannot run through this API yet.
 *
 * Thread safety: contexts and models may be used from any thread. A session is used by one
 * thread at a time; several sessions of one model may run at once, on one queue.
 *
 * Ordering: texel_session_enqueue puts a run on the context's queue after the caller's events and
 * returns an event that completes when the outputs are written; texel never calls clFinish on an
 * adopted queue (texel_session_run waits for its own event only). On an out-of-order queue the
 * run's commands are ordered by events. */
#ifndef TEXEL_TEXEL_H_
#define TEXEL_TEXEL_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TEXEL_API __attribute__((visibility("default")))
#else
#define TEXEL_API
#endif

typedef enum texel_status_t {
  TEXEL_OK = 0,
  TEXEL_ERROR_INVALID_ARGUMENT = 1, /* a null handle or pointer, a bad option, a wrong tensor */
  TEXEL_ERROR_NOT_FOUND = 2,        /* a missing file, device, input or output name */
  TEXEL_ERROR_INVALID_MODEL = 3,    /* a malformed or inconsistent model or fragment */
  TEXEL_ERROR_UNSUPPORTED = 4,      /* valid, but not supported: op, memory kind, feature */
  TEXEL_ERROR_DEVICE = 5,           /* an OpenCL call failed */
  TEXEL_ERROR_BUILD = 6,            /* an OpenCL program failed to build */
  TEXEL_ERROR_IO = 7,               /* a file system error */
  TEXEL_ERROR_INTERNAL = 8          /* a bug in texel */
} texel_status_t;

/* "TEXEL_ERROR_INVALID_ARGUMENT", ... */
TEXEL_API const char* texel_status_name(texel_status_t status);
/* The calling thread's last failure message ("" when none); valid until its next texel call. */
TEXEL_API const char* texel_last_error(void);

typedef enum texel_dtype_t {
  TEXEL_DTYPE_F32 = 0,
  TEXEL_DTYPE_F16 = 1,
  TEXEL_DTYPE_F64 = 2,
  TEXEL_DTYPE_I8 = 3,
  TEXEL_DTYPE_U8 = 4,
  TEXEL_DTYPE_I16 = 5,
  TEXEL_DTYPE_U16 = 6,
  TEXEL_DTYPE_I32 = 7,
  TEXEL_DTYPE_U32 = 8,
  TEXEL_DTYPE_I64 = 9,
  TEXEL_DTYPE_U64 = 10,
  TEXEL_DTYPE_BOOL = 11
} texel_dtype_t;

/* ---- devices ---- */

typedef struct texel_device_info_t {
  char label[256]; /* "P:D name (platform)", as `texel devices` shows it */
  char name[128];
  char vendor[128];
  char type[16]; /* "GPU", "CPU", "ACCELERATOR", "OTHER" */
  cl_platform_id platform;
  cl_device_id device;
} texel_device_info_t;

TEXEL_API texel_status_t texel_device_count(size_t* out_count);
TEXEL_API texel_status_t texel_device_get_info(size_t index, texel_device_info_t* out_info);

/* ---- contexts ---- */

typedef struct texel_context_s* texel_context_t;

typedef struct texel_context_options_t {
  size_t struct_size;
  const char* device; /* NULL or "": env TEXEL_DEVICE, else the first GPU, else the first CPU;
                         "gpu", "cpu", "P:D" or a substring of the device name */
} texel_context_options_t;

TEXEL_API void texel_context_options_init(texel_context_options_t* options);
/* A context of texel's own on the device options chooses (options may be NULL). */
TEXEL_API texel_status_t texel_context_create(const texel_context_options_t* options,
                                              texel_context_t* out_context);
/* Adopts a host's context, device and queue (each retained until the texel context goes). The
 * device must be one of the context's and the queue must be on both; it may be out-of-order. */
TEXEL_API texel_status_t texel_context_adopt(cl_context context, cl_device_id device,
                                             cl_command_queue queue, texel_context_t* out_context);
TEXEL_API texel_status_t texel_context_retain(texel_context_t context);
TEXEL_API texel_status_t texel_context_release(texel_context_t context);
TEXEL_API texel_status_t texel_context_get_device_info(texel_context_t context,
                                                       texel_device_info_t* out_info);
/* The context's queue (the adopted one, or texel's own), not retained: it lives as long as the
 * context; call clRetainCommandQueue to keep it longer. */
TEXEL_API texel_status_t texel_context_get_queue(texel_context_t context,
                                                 cl_command_queue* out_queue);

/* What texel made the host wait for on this context, counted from its creation: copies between
 * host and device memory, and waits for the device. */
typedef struct texel_host_counters_t {
  int64_t transfers;
  int64_t syncs;
} texel_host_counters_t;
TEXEL_API texel_status_t texel_context_get_host_counters(texel_context_t context,
                                                         texel_host_counters_t* out_counters);

/* ---- texel_gemm: C = alpha * op(A) op(B) + beta * C on the caller's buffers and queue ---- */

typedef enum texel_layout_t {
  TEXEL_ROW_MAJOR = 0, /* ld: elements between rows */
  TEXEL_COL_MAJOR = 1  /* ld: elements between columns */
} texel_layout_t;

/* How the products compute. The matrix-engine modes need one (NVIDIA compute capability 8.0 or
 * later, through inline PTX); elsewhere they fail with TEXEL_ERROR_UNSUPPORTED. */
typedef enum texel_compute_t {
  TEXEL_COMPUTE_FP32 = 0,   /* fp32 FMAs: any device */
  TEXEL_COMPUTE_TF32 = 1,   /* tf32 operands (10-bit mantissa), fp32 accumulation */
  TEXEL_COMPUTE_TF32X3 = 2, /* each fp32 operand as two tf32 parts: fp32-level accuracy */
  TEXEL_COMPUTE_FP16 = 3    /* f16 operands, fp32 accumulation */
} texel_compute_t;

typedef struct texel_gemm_t {
  size_t struct_size;
  texel_layout_t layout;
  int trans_a, trans_b;                /* nonzero: op(X) = X^T (A is then stored k x m, B n x k) */
  size_t m, n, k;                      /* C is m x n; m, n or batch 0 computes nothing */
  float alpha, beta;                   /* beta 0: C is written without being read */
  cl_mem a, b, c;                      /* buffers of the context */
  size_t a_offset, b_offset, c_offset; /* elements from each buffer's start */
  size_t lda, ldb, ldc;                /* leading dimensions, in elements */
  size_t batch;                        /* products, 1 by default */
  size_t stride_a, stride_b, stride_c; /* elements between batch entries (A, B: 0 repeats one
                                          matrix; C's entries must not overlap) */
  texel_dtype_t dtype;                 /* of A, B and C: TEXEL_DTYPE_F32 (default) or _F16 */
  texel_compute_t compute;             /* TEXEL_COMPUTE_FP32 by default */
} texel_gemm_t;

/* Row-major, no transposes, alpha 1, beta 0, batch 1, f32, fp32; sizes, buffers and leading
 * dimensions 0 (to be set). */
TEXEL_API void texel_gemm_init(texel_gemm_t* gemm);
/* Enqueues the product(s) on queue (NULL: the context's) after the num_wait_events events;
 * *out_event (when out_event is not NULL) completes with them, and the caller releases it; it is
 * set only on TEXEL_OK. The generated kernels are built on first use, once per shape class
 * (transposes, types, mode, alignment), and kept with the context. Checked, with a message naming
 * the argument: TEXEL_ERROR_INVALID_ARGUMENT for sizes or leading dimensions past 2^30, batches
 * past 65535, a leading dimension shorter than a stored row, a buffer too small for the elements
 * the problem reaches, overlapping batch entries of C, a dtype other than f32 and f16, a queue of
 * another context or device; TEXEL_ERROR_UNSUPPORTED for a compute mode the device has no matrix
 * engine for. A problem of few tiles and deep K (say 128 x 768 x 3072 on a large GPU) splits K
 * over more work-groups on an in-order queue, and on Hopper GPUs a large tf32 or fp16 problem
 * whose operands the warpgroup-MMA kernel cannot read as stored (tf32 with A or B not
 * contiguous along K, K off its 64-byte step, operands off 16 bytes) has them copied into a
 * packed layout first, by a kernel of its own on the same in-order queue: texel then keeps a
 * scratch buffer per queue for the partial sums or the packed operands (as large as the
 * operands packed, at most a quarter of the device's largest allocation: larger problems are not
 * packed; 8 queues at most, each retained while texel keeps its scratch, all released with the
 * context). */
TEXEL_API texel_status_t texel_gemm(texel_context_t context, const texel_gemm_t* gemm,
                                    cl_command_queue queue, cl_uint num_wait_events,
                                    const cl_event* wait_events, cl_event* out_event);

/* ---- models ---- */

typedef struct texel_model_s* texel_model_t;

typedef struct texel_compile_options_t {
  size_t struct_size;
  const char* backends;     /* NULL: "native"; else a comma list in order of preference,
                               e.g. "clblast,native" */
  const char* partition;    /* NULL: "estimate"; "measure" or "first" */
  const char* storage;      /* NULL: "buffer"; "texture" or "auto" */
  int texture_fp16;         /* images with f16 channels */
  const char* precision;    /* NULL: "fp32"; "fp16" (f16 storage, fp32 accumulation), "tf32" or
                               "tf32x3" (fp32 storage; products on the matrix engine where the
                               device has one, else fp32: docs/precision.md) */
  const char* input_shapes; /* NULL, or "NAME=DIMS" items separated by ';' fixing the shapes of
                               inputs ("input=1x3x224x224;mask=1x128"), as --input-shape */
  const char* settings;     /* NULL, or "NAME=VALUE" lines ('\n'-separated), any option that
                               texel_compile_option_get_info lists (the CLI's flags without the
                               "--": "precision=fp16\ndisable_pass=attention"), applied after
                               the fields above; repeatable options take one line per value */
  /* Called during the compile, on the compiling thread, with each thing the caller should hear
   * of the options and the device (an allowed backend that cannot run; texture storage or a
   * matrix engine the device lacks, so that tf32 runs in fp32) and of the tuning database (a
   * damaged or foreign line, read around and never trusted). message lives for the call. NULL:
   * not told (the CLI prints them as notes). Callers built against a texel.h older than these
   * two fields (a smaller struct_size) are not told. */
  void (*notice)(const char* message, void* user_data);
  void* notice_user_data;
} texel_compile_options_t;

TEXEL_API void texel_compile_options_init(texel_compile_options_t* options);

/* The compile options there are (one table makes the CLI's flags, these and the Python
 * package's keyword arguments): name ("input_shape"), values ("NAME=DIMS"), help, and whether
 * it may be given several times. The strings live as long as the library. */
typedef struct texel_compile_option_info_t {
  const char* name;
  const char* values;
  const char* help;
  int repeatable;
} texel_compile_option_info_t;
TEXEL_API size_t texel_compile_option_count(void);
TEXEL_API texel_status_t texel_compile_option_get_info(size_t index,
                                                       texel_compile_option_info_t* out_info);
/* An ONNX model (.onnx) or an MLIR linalg fragment (.mlir, or text that reads as one). */
TEXEL_API texel_status_t texel_model_compile_file(texel_context_t context, const char* path,
                                                  const texel_compile_options_t* options,
                                                  texel_model_t* out_model);
/* The same from memory: ONNX protobuf bytes or fragment text. */
TEXEL_API texel_status_t texel_model_compile_memory(texel_context_t context, const void* data,
                                                    size_t size,
                                                    const texel_compile_options_t* options,
                                                    texel_model_t* out_model);
TEXEL_API texel_status_t texel_model_retain(texel_model_t model);
TEXEL_API texel_status_t texel_model_release(texel_model_t model);

/* Artifacts (.texel, docs/artifact.md): a compiled model in one file, loaded without the
 * compiler (libtexel_runtime.so has every function of this header but texel_model_compile_*,
 * texel_compile_option* and texel_gemm*). with_binaries: also store the program's binary
 * for the model's device, used when the loading device, driver and texel version are the same
 * (the program is built from its source otherwise). A file that is not a valid artifact gives
 * TEXEL_ERROR_INVALID_MODEL; one whose device lacks what the model needs (images, an
 * extension, tensor cores) TEXEL_ERROR_UNSUPPORTED, naming what is missing. */
TEXEL_API texel_status_t texel_model_save(texel_model_t model, const char* path, int with_binaries);
TEXEL_API texel_status_t texel_model_load_file(texel_context_t context, const char* path,
                                               texel_model_t* out_model);
TEXEL_API texel_status_t texel_model_load_memory(texel_context_t context, const void* data,
                                                 size_t size, texel_model_t* out_model);

/* texel's version, "MAJOR.MINOR.PATCH". */
TEXEL_API const char* texel_version(void);

#define TEXEL_MAX_RANK 8
typedef struct texel_tensor_info_t {
  const char* name; /* valid while the model lives */
  texel_dtype_t dtype;
  size_t rank;
  int64_t shape[TEXEL_MAX_RANK];
  size_t bytes;
} texel_tensor_info_t;

TEXEL_API texel_status_t texel_model_input_count(texel_model_t model, size_t* out_count);
TEXEL_API texel_status_t texel_model_output_count(texel_model_t model, size_t* out_count);
TEXEL_API texel_status_t texel_model_get_input(texel_model_t model, size_t index,
                                               texel_tensor_info_t* out_info);
TEXEL_API texel_status_t texel_model_get_output(texel_model_t model, size_t index,
                                                texel_tensor_info_t* out_info);

/* ---- sessions ---- */

typedef struct texel_session_s* texel_session_t;

/* The kind of memory a tensor is in: the caller says; texel never guesses from a pointer. */
typedef enum texel_memory_kind_t {
  TEXEL_MEMORY_HOST = 0,      /* host memory: copied in before a run and out after it */
  TEXEL_MEMORY_CL_BUFFER = 1, /* a cl_mem buffer of the context, from byte `offset` */
  TEXEL_MEMORY_SVM = 2,       /* a coarse-grained SVM pointer (clSVMAlloc), 16-byte aligned */
  TEXEL_MEMORY_USM = 3        /* a USM pointer (cl_intel_unified_shared_memory), 16-byte aligned */
} texel_memory_kind_t;

typedef struct texel_tensor_t {
  size_t struct_size;
  texel_memory_kind_t kind;
  cl_mem buffer; /* TEXEL_MEMORY_CL_BUFFER */
  size_t offset; /* TEXEL_MEMORY_CL_BUFFER: bytes from the buffer's start */
  void* pointer; /* TEXEL_MEMORY_HOST, _SVM, _USM */
  size_t bytes;  /* TEXEL_MEMORY_HOST, _SVM, _USM: bytes available at pointer */
} texel_tensor_t;

TEXEL_API void texel_tensor_init(texel_tensor_t* tensor);

TEXEL_API texel_status_t texel_session_create(texel_model_t model, texel_session_t* out_session);
TEXEL_API texel_status_t texel_session_retain(texel_session_t session);
TEXEL_API texel_status_t texel_session_release(texel_session_t session);
/* Binds the caller's memory to an input or output by name, until bound again. Checked here:
 * the memory's context, size, alignment and kind. Kernels use cl_mem (at an offset that is a
 * multiple of the device's base address alignment), SVM and USM memory in place; other offsets
 * and outputs that are constants are copied on the device. The memory must stay valid until
 * the runs that use it have completed. */
TEXEL_API texel_status_t texel_session_bind_input(texel_session_t session, const char* name,
                                                  const texel_tensor_t* tensor);
TEXEL_API texel_status_t texel_session_bind_output(texel_session_t session, const char* name,
                                                   const texel_tensor_t* tensor);
/* Runs once and waits for the run's own event. Every input and output must be bound. */
TEXEL_API texel_status_t texel_session_run(texel_session_t session);
/* Enqueues one run after the num_wait_events events; *out_event (when out_event is not NULL)
 * completes when the outputs are written, and the caller releases it. No host wait. */
TEXEL_API texel_status_t texel_session_enqueue(texel_session_t session, cl_uint num_wait_events,
                                               const cl_event* wait_events, cl_event* out_event);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TEXEL_TEXEL_H_ */
