// The kernels of device/fns/examples/round_trip.cu: a CUDA C++ caller's own kernels that code
// frames with zipcoll's device functions. Compiled to relocatable device code
// (`nvcc -arch=sm_90 -rdc=true -cubin`), then linked with zipcoll_device_fns.ptx at run time.
//
// | kernel          | block g (block-stride over the frames)                                   |
// |-----------------|--------------------------------------------------------------------------|
// | encode_<dtype>  | frame g of `input` (`frame_elems` elements) into slot g; its bytes or status |
// | decode_<dtype>  | the frame in slot g (as long as `lens[g]` says) back into its elements   |
// | info            | thread per frame: zc_check_frame of slot g                               |
// | predict_<dtype> | one thread: each codec's predicted bytes for the whole input              |
#include <stdint.h>
#include "zipcoll_device_fns.h"

// One dtype's device functions, picked by the element type the caller uses.
#define ZC_DTYPE(T, suffix)                                                                      \
    __device__ int64_t encode_one(const T *in, uint64_t n, uint32_t codec, void *out,           \
                                  uint64_t cap, void *smem, uint32_t smem_bytes) {               \
        return zc_encode_##suffix(in, n, codec, out, cap, smem, smem_bytes);                     \
    }                                                                                            \
    __device__ int64_t decode_one(const void *frame, uint64_t len, T *out, uint64_t n,          \
                                  void *smem, uint32_t smem_bytes) {                             \
        return zc_decode_##suffix(frame, len, out, n, smem, smem_bytes);                         \
    }                                                                                            \
    __device__ int64_t predict_one(const T *in, uint64_t n, uint64_t frame_elems, void *sample,  \
                                   uint64_t *bytes) {                                            \
        return zc_predict_##suffix(in, n, frame_elems, sample, bytes);                           \
    }

ZC_DTYPE(uint16_t, bf16)
ZC_DTYPE(uint32_t, f32)
ZC_DTYPE(uint8_t, f8e4m3)

extern __shared__ __align__(16) unsigned char smem[];

template <typename T>
__device__ void encode_frames(const T *input, uint64_t n, uint64_t frame_elems, uint32_t codec,
                              unsigned char *slots, uint64_t slot_bytes, int64_t *lens,
                              uint32_t smem_bytes) {
    uint64_t nframes = (n + frame_elems - 1) / frame_elems;
    for (uint64_t g = blockIdx.x; g < nframes; g += gridDim.x) {
        uint64_t start = g * frame_elems;
        uint64_t len = n - start < frame_elems ? n - start : frame_elems;
        // every thread of the block, the same arguments; the function ends with a barrier
        int64_t r = encode_one(input + start, len, codec, slots + g * slot_bytes, slot_bytes, smem,
                               smem_bytes);
        if (threadIdx.x == 0) lens[g] = r;
    }
}

template <typename T>
__device__ void decode_frames(const unsigned char *slots, uint64_t slot_bytes, const int64_t *lens,
                              uint64_t nframes, T *out, uint64_t n, uint64_t frame_elems,
                              int64_t *results, uint32_t smem_bytes) {
    for (uint64_t g = blockIdx.x; g < nframes; g += gridDim.x) {
        uint64_t start = g * frame_elems;
        uint64_t len = n - start < frame_elems ? n - start : frame_elems;
        int64_t frame_len = lens[g] < 0 ? 0 : lens[g];
        int64_t r = decode_one(slots + g * slot_bytes, (uint64_t)frame_len, out + start, len, smem,
                               smem_bytes);
        if (threadIdx.x == 0) results[g] = r;
    }
}

#define KERNELS(T, suffix)                                                                       \
    extern "C" __global__ void encode_##suffix(const T *input, uint64_t n, uint64_t frame_elems, \
                                               uint32_t codec, unsigned char *slots,             \
                                               uint64_t slot_bytes, int64_t *lens,               \
                                               uint32_t smem_bytes) {                            \
        encode_frames(input, n, frame_elems, codec, slots, slot_bytes, lens, smem_bytes);        \
    }                                                                                            \
    extern "C" __global__ void decode_##suffix(const unsigned char *slots, uint64_t slot_bytes,  \
                                               const int64_t *lens, uint64_t nframes, T *out,    \
                                               uint64_t n, uint64_t frame_elems,                 \
                                               int64_t *results, uint32_t smem_bytes) {          \
        decode_frames(slots, slot_bytes, lens, nframes, out, n, frame_elems, results, smem_bytes); \
    }                                                                                            \
    extern "C" __global__ void predict_##suffix(const T *input, uint64_t n, uint64_t frame_elems, \
                                                void *sample, uint64_t *bytes, int64_t *result) { \
        if (blockIdx.x == 0 && threadIdx.x == 0)                                                 \
            *result = predict_one(input, n, frame_elems, sample, bytes);                         \
    }

KERNELS(uint16_t, bf16)
KERNELS(uint32_t, f32)
KERNELS(uint8_t, f8e4m3)

extern "C" __global__ void info(const unsigned char *slots, uint64_t slot_bytes, uint64_t nframes,
                                zc_frame_info *infos, int64_t *results) {
    uint64_t g = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (g < nframes) results[g] = zc_check_frame(slots + g * slot_bytes, slot_bytes, &infos[g]);
}
