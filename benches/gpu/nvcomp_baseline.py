"""nvCOMP 6 baseline on the same tensors as zipcoll's codec benchmark, in the same invocation.

Usage: python3 nvcomp_baseline.py DIR   (DIR holds the files of make_tensors.py)
For each file: ANS and Bitcomp, compress and decompress GB/s (uncompressed bytes over the
median of CUDA-event timed repeats after warm-up) and the compressed/original ratio, with the
round trip checked bit for bit. One line per (file, algorithm).
"""
import statistics, sys
import torch
from nvidia import nvcomp

DTYPES = {"bf16": (torch.int16, "<f2"), "f16": (torch.int16, "<f2"), "f32": (torch.int32, "<f4"),
          "f8e4m3": (torch.uint8, "|u1"), "f8e5m2": (torch.uint8, "|u1")}
REPEATS, WARMUP = 20, 3
stream = torch.cuda.current_stream()


def median_seconds(f):
    for _ in range(WARMUP):
        r = f()
    times = []
    for _ in range(REPEATS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); r = f(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times), r


for name in sys.argv[2:] if len(sys.argv) > 2 else ["normal_bf16", "weights_bf16", "grads_f32", "acts_bf16",
                                                     "weights_f16", "weights_f8e4m3", "grads_f8e5m2"]:
    dtype = name.split("_")[1]
    torch_ty, nv_ty = DTYPES[dtype]
    data = open(f"{sys.argv[1]}/{name}.bin", "rb").read()
    x = torch.frombuffer(bytearray(data), dtype=torch_ty).cuda()
    nbytes = len(data)
    for alg in ["ANS", "Bitcomp"]:
        try:
            codec = nvcomp.Codec(algorithm=alg, data_type=nv_ty, cuda_stream=stream.cuda_stream)
            view = x.view(torch.float16) if nv_ty == "<f2" else (x.view(torch.float32) if nv_ty == "<f4" else x)
            arr = nvcomp.as_array(view)
            te, enc = median_seconds(lambda: codec.encode(arr))
            td, dec = median_seconds(lambda: codec.decode(enc))
            ok = torch.equal(torch.from_dlpack(dec).view(torch.uint8).reshape(-1), x.view(torch.uint8).reshape(-1))
            print(f"nvcomp {name:16s} {alg:8s} ratio={enc.buffer_size / nbytes:.4f} "
                  f"enc={nbytes / te / 1e9:8.1f}GB/s dec={nbytes / td / 1e9:8.1f}GB/s lossless={ok}", flush=True)
        except Exception as e:  # report and go on: one failing config must not hide the others
            print(f"nvcomp {name:16s} {alg:8s} ERROR {type(e).__name__}: {str(e)[:200]}", flush=True)
