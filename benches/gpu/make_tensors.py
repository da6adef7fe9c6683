"""Makes the tensors zipcoll's codec benchmarks run on, on the GPU machine.

Writes raw little-endian files into OUTDIR (argument 1):

| file                 | dtype   | what                                                         |
|----------------------|---------|--------------------------------------------------------------|
| normal_bf16.bin      | bf16    | N(0, 1), 128 Mi values                                       |
| weights_bf16.bin     | bf16    | all parameters of a small GPT after training steps           |
| grads_f32.bin        | f32     | the gradients of the last step                               |
| acts_bf16.bin        | bf16    | hidden states entering the last block                        |
| weights_f16.bin      | f16     | the weights in fp16                                          |
| weights_f8e4m3.bin   | f8e4m3  | the weights cast to float8_e4m3fn                            |
| grads_f8e5m2.bin     | f8e5m2  | the gradients scaled by 2^12 and cast to float8_e5m2         |

The model is trained for a few steps of AdamW on synthetic Zipf-distributed tokens so that the
weights move away from their initialization and the gradients are those of a real loss.
"""
import os, sys, time
import torch
import torch.nn as nn

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
dev = torch.device("cuda:0")
vocab, d, layers, heads, seq, batch, steps = 32000, 1024, 6, 16, 512, 8, 30


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(seq, d) * 0.02)
        self.blocks = nn.ModuleList(Block() for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens, keep=None):
        mask = torch.triu(torch.full((seq, seq), float("-inf"), device=tokens.device), 1)
        x = self.emb(tokens) + self.pos
        for i, b in enumerate(self.blocks):
            if keep is not None and i == len(self.blocks) - 1:
                keep.append(x.detach())
            x = b(x, mask)
        return self.head(self.ln(x))


model = Gpt().to(dev).to(torch.bfloat16)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
ranks = torch.arange(1, vocab + 1, device=dev, dtype=torch.float32)
zipf = (1.0 / ranks) / (1.0 / ranks).sum()
t0 = time.time()
for step in range(steps):
    tokens = torch.multinomial(zipf, batch * (seq + 1), replacement=True).view(batch, seq + 1)
    keep = []
    logits = model(tokens[:, :-1], keep)
    loss = nn.functional.cross_entropy(logits.float().reshape(-1, vocab), tokens[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if step < steps - 1:
        opt.step()
print(f"trained {steps} steps in {time.time() - t0:.1f}s, final loss {loss.item():.3f}", flush=True)


def save(name, t):
    t.contiguous().view(torch.uint8).cpu().numpy().tofile(f"{out}/{name}")
    print(f"wrote {name}: {t.numel()} values, {t.numel() * t.element_size() / 2**20:.1f} MiB", flush=True)


weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
grads = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).float()
save("normal_bf16.bin", torch.randn(128 << 20, device=dev, dtype=torch.bfloat16))
save("weights_bf16.bin", weights)
save("grads_f32.bin", grads)
save("acts_bf16.bin", keep[0])
save("weights_f16.bin", weights.to(torch.float16))
save("weights_f8e4m3.bin", weights.float().clamp(-448, 448).to(torch.float8_e4m3fn))
save("grads_f8e5m2.bin", (grads * 4096).clamp(-57344, 57344).to(torch.float8_e5m2))
