import gzip, sys, collections, statistics
NAMES={0:'entry',1:'credit?',2:'credit!',3:'data?',4:'data!',5:'posted',6:'released',7:'exit',8:'setup',9:'fence<',10:'post<'}
def kernels(path):
    seqs=collections.defaultdict(list)  # (rank,block) -> list of kernels (list of (kind,step,t))
    for line in gzip.open(path,'rt'):
        if not line.startswith('ZT '): continue
        p=line.split()
        if len(p)!=6: continue
        _,r,b,k,s,t=p; r,b,k,s,t=int(r),int(b),int(k),int(s),int(t)
        if k==0: seqs[(r,b)].append([])
        if seqs[(r,b)]: seqs[(r,b)][-1].append((k,s,t))
    return seqs
path=sys.argv[1]; idx=int(sys.argv[2])
seqs=kernels(path)
ranks=sorted(set(r for r,b in seqs))
# kernel number idx for every block: its events relative to the earliest entry of any block, either rank
inst={key:v[idx] for key,v in seqs.items() if len(v)>idx}
t0=min(ev[0][2] for ev in inst.values())
for key in sorted(inst)[:int(sys.argv[3]) if len(sys.argv)>3 else 4]:
    ev=inst[key]
    print(key, ' '.join(f"{NAMES[k]}{s}@{(t-t0)/1000:.1f}" for k,s,t in ev))
# spread of entries and exits per rank
for r in ranks:
    ent=[v[0][2]-t0 for (rr,b),v in inst.items() if rr==r]
    ex=[v[-1][2]-t0 for (rr,b),v in inst.items() if rr==r]
    print(f"rank {r}: blocks {len(ent)} entry {min(ent)/1000:.1f}..{max(ent)/1000:.1f} us, exit {min(ex)/1000:.1f}..{max(ex)/1000:.1f} us")
