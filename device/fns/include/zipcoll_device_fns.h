/*
 * zipcoll's device-function library: the block frame codecs, frame validation and Auto's
 * size predictor as extern "C" device functions, for CUDA C++ kernels (a collective library's
 * own communication kernels, say) to call. The functions live in zipcoll_device_fns.ptx, which
 * `cd device/fns && cargo build --release --target nvptx64-nvidia-cuda` builds (after
 * `bash scripts/setup.sh`) into target/gpu/device-fns/nvptx64-nvidia-cuda/release/ for sm_90
 * (PTX 7.8; the driver JIT-compiles it for newer GPUs). Link it with your code:
 *
 *   nvcc -arch=sm_90 -rdc=true -cubin -o mine.cubin mine.cu      then, at run time,
 *   cuLinkCreate / cuLinkAddFile(CU_JIT_INPUT_PTX, "zipcoll_device_fns.ptx")
 *                / cuLinkAddFile(CU_JIT_INPUT_CUBIN, "mine.cubin") / cuLinkComplete
 *
 * (device/fns/examples/round_trip.cu does exactly that; device/fns/nccl-fork.md shows where a
 * NCCL fork would call these functions.) The frames are zipcoll's block
 * frames (format version 2), byte for byte what zipcoll's own encoders write for the same
 * data, whatever the block size; zipcoll decodes them and these functions decode zipcoll's.
 *
 * Results: a value >= 0 is the result (bytes, elements); a negative value is minus a status
 * code: ZC_STATUS_* (a rejected frame or argument; never renumbered) or ZC_INVALID_ARGUMENT.
 * No input makes a function read or write outside the buffers it was given.
 *
 * Block functions (zc_encode_*, zc_decode_*): called by every thread of a one-dimensional
 * block of whole warps, converged, with the same arguments; they use the block barrier
 * (bar.sync 0, as __syncthreads) and end with one, so the caller may read `out` and reuse
 * `scratch` right after. `scratch` is the block's shared memory (ZC_*_SCRATCH_BYTES of it;
 * zipcoll launches 128 threads: 40372 bytes to encode, 17364 to decode; more than 48 KiB
 * needs cudaFuncAttributeMaxDynamicSharedMemorySize). Registers: the functions take what
 * ptxas gives them (up to 255 a thread) unless capped, so blocks of more than 256 threads need
 * the cap 65536 / threads for the whole link: -maxrregcount=128 for nvcc and
 * CU_JIT_MAX_REGISTERS = 128 for cuLink at 512 threads. Other functions: any thread.
 *
 * zc_predict_* keeps its tables on the thread's stack: about 5.1 KiB (ptxas: 1320 + 3784
 * bytes of frames at sm_90), more than CUDA's default 1 KiB: raise it with
 * cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 8192) (cudaDeviceSetLimit(cudaLimitStackSize, 8192)).
 *
 * The dtypes are the elements' bits: bf16 and f16 as uint16_t, f32 as uint32_t, the two fp8
 * (OCP e4m3 FN and e5m2) as uint8_t; NaN payloads, -0.0 and subnormals round-trip exactly.
 *
 * device/tests/device_fns.rs checks every constant here against the Rust source, and
 * tests/tests/gpu_code.rs checks every prototype against the PTX.
 */
#ifndef ZIPCOLL_DEVICE_FNS_H
#define ZIPCOLL_DEVICE_FNS_H

#include <stdint.h>

/* Codec ids (frame headers, zc_encode_*'s `codec`, zc_predict_*'s `bytes` index). The block
 * functions code RAW and ExpAns; the others are ZC_STATUS_CODEC_NOT_BUILT there. */
#define ZC_CODEC_RAW 0
#define ZC_CODEC_FIXEDLEN 1
#define ZC_CODEC_EXPWINDOW 2
#define ZC_CODEC_EXPANS 3
#define ZC_CODEC_HUFFMAN 4
#define ZC_CODECS 5

/* DType ids (zc_frame_info.dtype) of the library's dtypes. */
#define ZC_DTYPE_BF16 0
#define ZC_DTYPE_F16 1
#define ZC_DTYPE_F32 2
#define ZC_DTYPE_F8E4M3 3
#define ZC_DTYPE_F8E5M2 4

/* Status codes: a rejected call returns minus one of these. */
#define ZC_STATUS_TRUNCATED 1           /* the frame is shorter than its header says */
#define ZC_STATUS_BAD_MAGIC 2
#define ZC_STATUS_UNSUPPORTED_VERSION 3 /* not a block frame (version 2) */
#define ZC_STATUS_UNKNOWN_CODEC 4
#define ZC_STATUS_UNKNOWN_DTYPE 5
#define ZC_STATUS_RESERVED 6            /* reserved header fields are not zero */
#define ZC_STATUS_HEADER_CHECKSUM 7
#define ZC_STATUS_BAD_RAW_LENGTH 8      /* the raw length does not fit the output or the dtype */
#define ZC_STATUS_CORRUPT 9             /* the coded section is damaged */
#define ZC_STATUS_RAW_CHECKSUM 10       /* the decoded elements fail the frame's checksum */
#define ZC_STATUS_OUTPUT_TOO_SMALL 11
#define ZC_STATUS_WRONG_DTYPE 12        /* the frame holds another dtype */
#define ZC_STATUS_INPUT_TOO_LARGE 13    /* more than 2^20 split words in a frame */
#define ZC_STATUS_SCRATCH_TOO_SMALL 14
#define ZC_STATUS_CODEC_NOT_BUILT 15    /* the codec has no block coder for this dtype */
/* A null pointer with a non-zero length, a pointer not aligned for its type, or a block that
 * is not a whole number of warps (the negative value itself). */
#define ZC_INVALID_ARGUMENT (-64)

/* Shared memory of the block functions for blocks of `threads` threads (any codec). */
#define ZC_ENCODE_SCRATCH_BYTES(threads) (6580u + 8448u * (((threads) + 31u) / 32u))
#define ZC_DECODE_SCRATCH_BYTES(threads) (9012u + 2088u * (((threads) + 31u) / 32u))
/* The largest frame of `n` elements of `elem_bytes` bytes: the header and the data as is. */
#define ZC_MAX_FRAME_BYTES(n, elem_bytes) (32ull + (uint64_t)(n) * (elem_bytes))
/* zc_predict_*'s work memory: bytes, and their alignment. */
#define ZC_SAMPLE_BYTES 17432
#define ZC_SAMPLE_ALIGN 8

/* What zc_check_frame reads of a block frame's header. */
typedef struct zc_frame_info {
    uint32_t frame_bytes; /* header + payload: where the next frame of a stream starts */
    uint32_t raw_bytes;   /* bytes of the elements it decodes to */
    uint32_t elements;    /* elements it decodes to */
    uint32_t codec;       /* ZC_CODEC_* */
    uint32_t dtype;       /* ZC_DTYPE_* */
    uint32_t version;     /* 2 */
} zc_frame_info;

#ifdef __CUDACC__
#ifdef __cplusplus
extern "C" {
#endif

/* Encodes the `n` elements at `input` as one block frame at `out` (`out_bytes`, at least
 * ZC_MAX_FRAME_BYTES(n, size)) with `codec`, RAW where that is not smaller; returns the
 * frame's bytes. Block function. */
__device__ int64_t zc_encode_bf16(const uint16_t *input, uint64_t n, uint32_t codec, void *out,
                                  uint64_t out_bytes, void *scratch, uint32_t scratch_bytes);
__device__ int64_t zc_encode_f16(const uint16_t *input, uint64_t n, uint32_t codec, void *out,
                                 uint64_t out_bytes, void *scratch, uint32_t scratch_bytes);
__device__ int64_t zc_encode_f32(const uint32_t *input, uint64_t n, uint32_t codec, void *out,
                                 uint64_t out_bytes, void *scratch, uint32_t scratch_bytes);
__device__ int64_t zc_encode_f8e4m3(const uint8_t *input, uint64_t n, uint32_t codec, void *out,
                                    uint64_t out_bytes, void *scratch, uint32_t scratch_bytes);
__device__ int64_t zc_encode_f8e5m2(const uint8_t *input, uint64_t n, uint32_t codec, void *out,
                                    uint64_t out_bytes, void *scratch, uint32_t scratch_bytes);

/* Decodes the block frame at `frame` (`frame_bytes`, at least the whole frame) into at most
 * `out_elems` elements at `out`; returns the elements decoded. Every check of zipcoll's own
 * decoder runs, the checksum over the output included; on an error `out` may hold part of
 * the frame. Block function. */
__device__ int64_t zc_decode_bf16(const void *frame, uint64_t frame_bytes, uint16_t *out,
                                  uint64_t out_elems, void *scratch, uint32_t scratch_bytes);
__device__ int64_t zc_decode_f16(const void *frame, uint64_t frame_bytes, uint16_t *out,
                                 uint64_t out_elems, void *scratch, uint32_t scratch_bytes);
__device__ int64_t zc_decode_f32(const void *frame, uint64_t frame_bytes, uint32_t *out,
                                 uint64_t out_elems, void *scratch, uint32_t scratch_bytes);
__device__ int64_t zc_decode_f8e4m3(const void *frame, uint64_t frame_bytes, uint8_t *out,
                                    uint64_t out_elems, void *scratch, uint32_t scratch_bytes);
__device__ int64_t zc_decode_f8e5m2(const void *frame, uint64_t frame_bytes, uint8_t *out,
                                    uint64_t out_elems, void *scratch, uint32_t scratch_bytes);

/* Auto's prediction for `n` elements coded in frames of `frame_elems` (0: one frame): each
 * codec's bytes for the whole batch, frames included, into `bytes[ZC_CODECS]`, from a sample
 * of at most 64 KiB of it taken in `sample` (ZC_SAMPLE_BYTES, ZC_SAMPLE_ALIGN). Returns 0.
 * One thread. */
__device__ int64_t zc_predict_bf16(const uint16_t *input, uint64_t n, uint64_t frame_elems,
                                   void *sample, uint64_t *bytes);
__device__ int64_t zc_predict_f16(const uint16_t *input, uint64_t n, uint64_t frame_elems,
                                  void *sample, uint64_t *bytes);
__device__ int64_t zc_predict_f32(const uint32_t *input, uint64_t n, uint64_t frame_elems,
                                  void *sample, uint64_t *bytes);
__device__ int64_t zc_predict_f8e4m3(const uint8_t *input, uint64_t n, uint64_t frame_elems,
                                     void *sample, uint64_t *bytes);
__device__ int64_t zc_predict_f8e5m2(const uint8_t *input, uint64_t n, uint64_t frame_elems,
                                     void *sample, uint64_t *bytes);

/* ZC_MAX_FRAME_BYTES for each dtype (UINT64_MAX where it overflows). */
__device__ uint64_t zc_max_frame_bytes_bf16(uint64_t n);
__device__ uint64_t zc_max_frame_bytes_f16(uint64_t n);
__device__ uint64_t zc_max_frame_bytes_f32(uint64_t n);
__device__ uint64_t zc_max_frame_bytes_f8e4m3(uint64_t n);
__device__ uint64_t zc_max_frame_bytes_f8e5m2(uint64_t n);

/* Validates the header of the block frame at `frame` (magic, version, ids, reserved fields,
 * its checksum, a payload within `frame_bytes`, whole elements), fills `*info` (if not null)
 * and returns the frame's bytes. The payload is checked by zc_decode_*. */
__device__ int64_t zc_check_frame(const void *frame, uint64_t frame_bytes, zc_frame_info *info);

/* ZC_ENCODE_SCRATCH_BYTES / ZC_DECODE_SCRATCH_BYTES. */
__device__ uint32_t zc_encode_scratch_bytes(uint32_t block_dim);
__device__ uint32_t zc_decode_scratch_bytes(uint32_t block_dim);

#ifdef __cplusplus
}
#endif
#endif /* __CUDACC__ */

#endif /* ZIPCOLL_DEVICE_FNS_H */
