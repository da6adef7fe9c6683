// A CUDA C++ program using zipcoll's device-function library from its own kernels
// (round_trip_kernels.cu), linked with zipcoll_device_fns.ptx at run time by the driver's
// linker (cuLink). It checks, on the GPU:
//   - bf16 (N(0,1) with NaN payloads, infinities, -0.0 and subnormals mixed in), f32 and fp8
//     e4m3 tensors round-trip bit for bit through ExpAns and RAW block frames;
//   - the frames do not depend on the block size (128 and 512 threads write the same bytes);
//   - zc_check_frame reads every frame's header; damaged frames are rejected with a status;
//   - zc_predict's ExpAns bytes are within 10% of the bytes the frames took (the arbitration's
//     sampled estimate: 6.8% under on this bf16 mix of N(0,1) and specials, on an H100);
// and prints ratios and encode/decode GB/s (CUDA events, median of 10 after 3 warm-ups).
// Prints "device fns: ok" and exits 0 when every check passes, 1 otherwise.
//
//   nvcc -arch=sm_90 -rdc=true -cubin -maxrregcount=128 -I../include -o round_trip_kernels.cubin round_trip_kernels.cu
//   nvcc -I../include -o round_trip round_trip.cu -lcuda
//   ./round_trip zipcoll_device_fns.ptx round_trip_kernels.cubin [bf16 elements]
#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <random>
#include <vector>
#include "zipcoll_device_fns.h"

static int failures = 0;

#define CU(call)                                                                       \
    do {                                                                               \
        CUresult e_ = (call);                                                          \
        if (e_ != CUDA_SUCCESS) {                                                      \
            const char *s_ = "?";                                                      \
            cuGetErrorString(e_, &s_);                                                 \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_);  \
            exit(2);                                                                   \
        }                                                                              \
    } while (0)

#define CHECK(cond, ...)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
            fprintf(stderr, __VA_ARGS__);                                              \
            fprintf(stderr, "\n");                                                     \
            failures++;                                                                \
        }                                                                              \
    } while (0)

static CUmodule module;

static CUfunction fn(const char *name) {
    CUfunction f;
    CU(cuModuleGetFunction(&f, module, name));
    return f;
}

// Launches `f` and checks the launch and the kernel's completion.
static void launch(CUfunction f, unsigned blocks, unsigned threads, unsigned smem, void **args) {
    if (smem > 48 * 1024)
        CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
    CU(cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, smem, 0, args, NULL));
    CU(cuCtxSynchronize());
}

static uint16_t bf16_of(float x) {  // round to nearest even, NaN kept quiet
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

// Elements of `bits` bits: mostly N(0,1) (scale 1 and 0.03 by halves of 1024), every 16th
// position a special: a NaN with a payload, a negative NaN, -0.0, a subnormal, any bits.
template <typename T>
static std::vector<T> make_data(size_t n, int exp_bits, int man_bits, uint32_t seed,
                                T (*of_float)(float)) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int bits = 8 * sizeof(T);
    const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    const uint64_t exp_mask = ((1ull << exp_bits) - 1) << man_bits, sign = 1ull << (bits - 1);
    std::vector<T> v(n);
    for (size_t i = 0; i < n; i++) {
        uint64_t x;
        switch (i % 16) {
            case 0: x = exp_mask | (rng() & ((1ull << man_bits) - 1)) | 1; break;
            case 1: x = sign | exp_mask | 1; break;
            case 2: x = sign; break;
            case 3: x = rng() & ((1ull << man_bits) - 1); break;
            case 4: x = rng(); break;
            default: x = of_float(normal(rng) * ((i % 1024) < 512 ? 1.0f : 0.03f));
        }
        v[i] = (T)(x & mask);
    }
    return v;
}

static uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static uint16_t bf16_bits(float x) { return bf16_of(x); }
static uint8_t e4m3_bits(float x) {  // crude: sign, then a clamped 4-bit exponent and 3-bit mantissa
    uint32_t u = f32_bits(x);
    int e = (int)((u >> 23) & 0xff) - 127 + 7;
    uint8_t s = (u >> 24) & 0x80;
    if (e <= 0) return s;
    if (e > 15) e = 15;
    uint8_t m = (u >> 20) & 7;
    if (e == 15 && m == 7) m = 6;  // 0x7f is NaN in e4m3 FN
    return s | (uint8_t)(e << 3) | m;
}

struct Timing { double enc_ms, dec_ms; };

static double median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Encodes `host` in frames of `frame_elems` with `codec` by blocks of `threads`, decodes, checks
// bit-exactness; returns the frames' bytes (one slot per frame) and their lengths.
template <typename T>
static void round_trip(const char *suffix, const std::vector<T> &host, uint64_t frame_elems,
                       uint32_t codec, unsigned threads, std::vector<unsigned char> *frames_out,
                       std::vector<int64_t> *lens_out, Timing *timing) {
    const uint64_t n = host.size(), nframes = (n + frame_elems - 1) / frame_elems;
    const uint64_t slot = (ZC_MAX_FRAME_BYTES(frame_elems, sizeof(T)) + 15) / 16 * 16;
    CUdeviceptr d_in, d_slots, d_lens, d_out, d_results;
    CU(cuMemAlloc(&d_in, n * sizeof(T)));
    CU(cuMemAlloc(&d_slots, nframes * slot));
    CU(cuMemAlloc(&d_lens, nframes * 8));
    CU(cuMemAlloc(&d_out, n * sizeof(T)));
    CU(cuMemAlloc(&d_results, nframes * 8));
    CU(cuMemcpyHtoD(d_in, host.data(), n * sizeof(T)));
    CU(cuMemsetD8(d_out, 0xEE, n * sizeof(T)));
    char name[64];
    snprintf(name, sizeof name, "encode_%s", suffix);
    CUfunction enc = fn(name);
    snprintf(name, sizeof name, "decode_%s", suffix);
    CUfunction dec = fn(name);
    uint32_t enc_smem = ZC_ENCODE_SCRATCH_BYTES(threads), dec_smem = ZC_DECODE_SCRATCH_BYTES(threads);
    unsigned blocks = (unsigned)std::min<uint64_t>(nframes, 132 * 4);
    void *enc_args[] = {&d_in, (void *)&n, &frame_elems, &codec, &d_slots, (void *)&slot, &d_lens, &enc_smem};
    void *dec_args[] = {&d_slots, (void *)&slot, &d_lens, (void *)&nframes, &d_out, (void *)&n, &frame_elems, &d_results, &dec_smem};
    launch(enc, blocks, threads, enc_smem, enc_args);
    launch(dec, blocks, threads, dec_smem, dec_args);
    std::vector<int64_t> lens(nframes), results(nframes);
    std::vector<T> back(n);
    CU(cuMemcpyDtoH(lens.data(), d_lens, nframes * 8));
    CU(cuMemcpyDtoH(results.data(), d_results, nframes * 8));
    CU(cuMemcpyDtoH(back.data(), d_out, n * sizeof(T)));
    for (uint64_t g = 0; g < nframes; g++) {
        uint64_t want = std::min(frame_elems, n - g * frame_elems);
        CHECK(lens[g] > 0, "%s codec %u: frame %llu encode status %lld", suffix, codec, (unsigned long long)g, (long long)lens[g]);
        CHECK(results[g] == (int64_t)want, "%s codec %u: frame %llu decode gave %lld", suffix, codec, (unsigned long long)g, (long long)results[g]);
    }
    CHECK(memcmp(back.data(), host.data(), n * sizeof(T)) == 0, "%s codec %u threads %u: not bit-exact", suffix, codec, threads);
    if (timing) {
        CUevent a, b;
        CU(cuEventCreate(&a, 0));
        CU(cuEventCreate(&b, 0));
        // one launch of `f`, timed by events around it
        auto time_ms = [&](CUfunction f, unsigned smem, void **args) {
            float ms;
            CU(cuEventRecord(a, 0));
            CU(cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, smem, 0, args, NULL));
            CU(cuEventRecord(b, 0));
            CU(cuEventSynchronize(b));
            CU(cuEventElapsedTime(&ms, a, b));
            return ms;
        };
        std::vector<float> te, td;
        for (int rep = 0; rep < 13; rep++) {
            float e = time_ms(enc, enc_smem, enc_args), d = time_ms(dec, dec_smem, dec_args);
            if (rep >= 3) {
                te.push_back(e);
                td.push_back(d);
            }
        }
        CU(cuCtxSynchronize());
        timing->enc_ms = median(te);
        timing->dec_ms = median(td);
        CU(cuEventDestroy(a));
        CU(cuEventDestroy(b));
    }
    frames_out->resize(nframes * slot);
    CU(cuMemcpyDtoH(frames_out->data(), d_slots, nframes * slot));
    *lens_out = lens;
    CU(cuMemFree(d_in));
    CU(cuMemFree(d_slots));
    CU(cuMemFree(d_lens));
    CU(cuMemFree(d_out));
    CU(cuMemFree(d_results));
}

// Decodes `frames` (slots of `slot` bytes, `lens` each) with one block per frame; the statuses.
template <typename T>
static std::vector<int64_t> decode_statuses(const char *suffix, const std::vector<unsigned char> &frames,
                                            const std::vector<int64_t> &lens, uint64_t slot,
                                            uint64_t n, uint64_t frame_elems) {
    uint64_t nframes = lens.size();
    CUdeviceptr d_slots, d_lens, d_out, d_results;
    CU(cuMemAlloc(&d_slots, frames.size()));
    CU(cuMemAlloc(&d_lens, nframes * 8));
    CU(cuMemAlloc(&d_out, n * sizeof(T)));
    CU(cuMemAlloc(&d_results, nframes * 8));
    CU(cuMemcpyHtoD(d_slots, frames.data(), frames.size()));
    CU(cuMemcpyHtoD(d_lens, lens.data(), nframes * 8));
    char name[64];
    snprintf(name, sizeof name, "decode_%s", suffix);
    unsigned threads = 128;
    uint32_t smem = ZC_DECODE_SCRATCH_BYTES(threads);
    void *args[] = {&d_slots, &slot, &d_lens, &nframes, &d_out, &n, &frame_elems, &d_results, &smem};
    launch(fn(name), (unsigned)nframes, threads, smem, args);
    std::vector<int64_t> results(nframes);
    CU(cuMemcpyDtoH(results.data(), d_results, nframes * 8));
    CU(cuMemFree(d_slots));
    CU(cuMemFree(d_lens));
    CU(cuMemFree(d_out));
    CU(cuMemFree(d_results));
    return results;
}

template <typename T>
static void check_dtype(const char *suffix, const std::vector<T> &host, uint64_t frame_elems, bool timed) {
    const uint64_t n = host.size(), nframes = (n + frame_elems - 1) / frame_elems;
    const uint64_t slot = (ZC_MAX_FRAME_BYTES(frame_elems, sizeof(T)) + 15) / 16 * 16;
    std::vector<unsigned char> f128, f512, fraw;
    std::vector<int64_t> l128, l512, lraw;
    Timing t = {0, 0}, traw = {0, 0};
    round_trip(suffix, host, frame_elems, ZC_CODEC_EXPANS, 128, &f128, &l128, timed ? &t : NULL);
    round_trip(suffix, host, frame_elems, ZC_CODEC_EXPANS, 512, &f512, &l512, NULL);
    round_trip(suffix, host, frame_elems, ZC_CODEC_RAW, 128, &fraw, &lraw, timed ? &traw : NULL);
    bool same = l128 == l512;
    for (uint64_t g = 0; same && g < nframes; g++)
        same = memcmp(&f128[g * slot], &f512[g * slot], (size_t)l128[g]) == 0;
    CHECK(same, "%s: 128 and 512 threads wrote other frames", suffix);
    uint64_t total = 0;
    for (int64_t l : l128) total += l > 0 ? (uint64_t)l : 0;
    double raw_bytes = (double)n * sizeof(T);
    printf("%-7s %10llu elems  ExpAns ratio %.4f", suffix, (unsigned long long)n, total / raw_bytes);
    if (timed)
        printf("  encode %.1f GB/s  decode %.1f GB/s  (RAW frames %.1f / %.1f GB/s)",
               raw_bytes / t.enc_ms / 1e6, raw_bytes / t.dec_ms / 1e6, raw_bytes / traw.enc_ms / 1e6,
               raw_bytes / traw.dec_ms / 1e6);
    printf("\n");

    // headers: zc_check_frame on every slot
    CUdeviceptr d_slots, d_infos, d_results;
    CU(cuMemAlloc(&d_slots, f128.size()));
    CU(cuMemAlloc(&d_infos, nframes * sizeof(zc_frame_info)));
    CU(cuMemAlloc(&d_results, nframes * 8));
    CU(cuMemcpyHtoD(d_slots, f128.data(), f128.size()));
    uint64_t nf = nframes, sl = slot;
    void *args[] = {&d_slots, &sl, &nf, &d_infos, &d_results};
    launch(fn("info"), (unsigned)((nframes + 127) / 128), 128, 0, args);
    std::vector<zc_frame_info> infos(nframes);
    std::vector<int64_t> results(nframes);
    CU(cuMemcpyDtoH(infos.data(), d_infos, nframes * sizeof(zc_frame_info)));
    CU(cuMemcpyDtoH(results.data(), d_results, nframes * 8));
    for (uint64_t g = 0; g < nframes; g++) {
        uint64_t want = std::min(frame_elems, n - g * frame_elems);
        CHECK(results[g] == l128[g] && infos[g].elements == want && infos[g].version == 2 &&
                  infos[g].frame_bytes == (uint32_t)l128[g],
              "%s frame %llu: zc_check_frame %lld, %u elements", suffix, (unsigned long long)g,
              (long long)results[g], infos[g].elements);
    }
    CU(cuMemFree(d_slots));
    CU(cuMemFree(d_infos));
    CU(cuMemFree(d_results));

    // damage: frame 0's magic, frame 1 cut one byte short, a byte of frame 2's payload flipped
    if (nframes >= 3) {
        std::vector<unsigned char> bad = f128;
        std::vector<int64_t> lens = l128;
        bad[0] ^= 1;
        lens[1] -= 1;
        bad[2 * slot + 32 + (size_t)(l128[2] - 32) / 2] ^= 0x10;
        std::vector<int64_t> r = decode_statuses<T>(suffix, bad, lens, slot, n, frame_elems);
        CHECK(r[0] == -ZC_STATUS_BAD_MAGIC, "%s: bad magic gave %lld", suffix, (long long)r[0]);
        CHECK(r[1] == -ZC_STATUS_TRUNCATED, "%s: a short frame gave %lld", suffix, (long long)r[1]);
        CHECK(r[2] < 0, "%s: a flipped payload byte gave %lld", suffix, (long long)r[2]);
        for (uint64_t g = 3; g < nframes; g++)
            CHECK(r[g] > 0, "%s: intact frame %llu gave %lld", suffix, (unsigned long long)g, (long long)r[g]);
        printf("%-7s damaged frames: magic %lld, truncated %lld, payload bit %lld; intact ones decoded\n",
               suffix, (long long)r[0], (long long)r[1], (long long)r[2]);
    }

    // the predictor, one thread, against the bytes the frames took
    CUdeviceptr d_in, d_sample, d_bytes, d_result;
    CU(cuMemAlloc(&d_in, n * sizeof(T)));
    CU(cuMemAlloc(&d_sample, ZC_SAMPLE_BYTES));
    CU(cuMemAlloc(&d_bytes, ZC_CODECS * 8));
    CU(cuMemAlloc(&d_result, 8));
    CU(cuMemcpyHtoD(d_in, host.data(), n * sizeof(T)));
    char name[64];
    snprintf(name, sizeof name, "predict_%s", suffix);
    uint64_t nn = n, fe = frame_elems;
    void *pargs[] = {&d_in, &nn, &fe, &d_sample, &d_bytes, &d_result};
    launch(fn(name), 1, 32, 0, pargs);
    uint64_t bytes[ZC_CODECS];
    int64_t result;
    CU(cuMemcpyDtoH(bytes, d_bytes, sizeof bytes));
    CU(cuMemcpyDtoH(&result, d_result, 8));
    double err = fabs((double)bytes[ZC_CODEC_EXPANS] - (double)total) / (double)total;
    CHECK(result == 0 && bytes[ZC_CODEC_RAW] == n * sizeof(T), "%s: predict gave %lld, RAW %llu", suffix,
          (long long)result, (unsigned long long)bytes[ZC_CODEC_RAW]);
    CHECK(err < 0.10, "%s: predicted %llu ExpAns bytes, the frames took %llu", suffix,
          (unsigned long long)bytes[ZC_CODEC_EXPANS], (unsigned long long)total);
    printf("%-7s predicted ExpAns %llu bytes, realized %llu (%.2f%% off)\n", suffix,
           (unsigned long long)bytes[ZC_CODEC_EXPANS], (unsigned long long)total, 100 * err);
    CU(cuMemFree(d_in));
    CU(cuMemFree(d_sample));
    CU(cuMemFree(d_bytes));
    CU(cuMemFree(d_result));
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s zipcoll_device_fns.ptx round_trip_kernels.cubin [bf16 elements]\n", argv[0]);
        return 2;
    }
    CU(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CU(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 8192));  // zc_predict_*'s tables (the header)
    char devname[128];
    CU(cuDeviceGetName(devname, sizeof devname, dev));

    static char log[16384], err[16384];
    // at most 128 registers a thread, so that blocks of 512 threads launch (65536 / 512): the
    // library's PTX is compiled here, the kernels' cubin by nvcc -maxrregcount=128
    CUjit_option opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                           CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                           CU_JIT_MAX_REGISTERS};
    void *vals[] = {log, (void *)(uintptr_t)sizeof log, err, (void *)(uintptr_t)sizeof err,
                    (void *)(uintptr_t)128};
    CUlinkState link;
    CU(cuLinkCreate(5, opts, vals, &link));
    CUresult r1 = cuLinkAddFile(link, CU_JIT_INPUT_PTX, argv[1], 0, NULL, NULL);
    CUresult r2 = r1 == CUDA_SUCCESS ? cuLinkAddFile(link, CU_JIT_INPUT_CUBIN, argv[2], 0, NULL, NULL) : r1;
    void *image;
    size_t image_size = 0;
    CUresult r3 = r2 == CUDA_SUCCESS ? cuLinkComplete(link, &image, &image_size) : r2;
    if (r3 != CUDA_SUCCESS) {
        fprintf(stderr, "cuLink failed (%d): %s\n", (int)r3, err);
        return 2;
    }
    CU(cuModuleLoadData(&module, image));
    CU(cuLinkDestroy(link));
    printf("%s: linked %s with %s (cuLink, %zu bytes)\n", devname, argv[1], argv[2], image_size);

    // elements of bf16 (default 2^26: 128 MiB); f32 takes half as many, fp8 as many
    const size_t big = argc == 4 ? strtoull(argv[3], NULL, 10) : 64u << 20;
    if (big < 3 * 65536) {
        fprintf(stderr, "at least %d elements (three frames of every dtype)\n", 3 * 65536);
        return 2;
    }
    check_dtype<uint16_t>("bf16", make_data<uint16_t>(big, 8, 7, 1, bf16_bits), 32768, true);
    check_dtype<uint32_t>("f32", make_data<uint32_t>(big / 2, 8, 23, 2, f32_bits), 16384, true);
    check_dtype<uint8_t>("f8e4m3", make_data<uint8_t>(big, 4, 3, 3, e4m3_bits), 65536, true);
    // odd lengths: a last frame of a few elements
    check_dtype<uint16_t>("bf16", make_data<uint16_t>(3 * 32768 + 5, 8, 7, 4, bf16_bits), 32768, false);

    CU(cuModuleUnload(module));
    CU(cuDevicePrimaryCtxRelease(dev));
    if (failures) {
        printf("device fns: %d checks failed\n", failures);
        return 1;
    }
    printf("device fns: ok\n");
    return 0;
}
