import sys,time,json,torch
sys.path.insert(0,"scripts/device");from measure_common import graph_mean_us,gpu_environment
# torch._grouped_mm (bf16) at MoE decode shapes on one GPU: few rows an expert.
# Weights as measure-moe-step.py lays them out: (E, n, k) contiguous, passed
# transposed (.mT).  Each case: one call captured in a CUDA graph, replayed
# 20 times, the mean in us.  Rows: experts, active experts (the rest get no
# rows), rows an active expert, n, k.
T=time.time();O=sys.argv[1];C="cuda";F=[]
tm=lambda f:graph_mean_us(f,F)
W=open(O+"/grouped-decode.csv","w");print("experts,active,rows_per_expert,n,k,us",file=W)
def case(E,A,R,n,k,w):
 c=torch.zeros(E,dtype=torch.int32,device=C);c[:A]=R;of=c.cumsum(0).int()
 a=torch.randn(A*R,k,device=C,dtype=torch.bfloat16)
 f=lambda:torch._grouped_mm(a,w[:E],offs=of)
 print(E,A,R,n,k,tm(f),sep=",",file=W,flush=True);return f
S=((1536,2048),(2048,768),(3072,4096),(4096,1536),(384,2048),(2048,192))
for n,k in S:
 w=torch.randn(128,n,k,device=C,dtype=torch.bfloat16).mT
 for R in (1,2,4,8,16,32,64,65,128):case(128,128,R,n,k,w)
 if n==3072:
  for E in (8,16,24,33,48,64,66,67,96,100,128):
   if E<=128:case(E,E,8,n,k,w)
  for A in (8,32,64,96):case(128,A,8,n,k,w)
 if n==2048 and k==768:
  f=case(128,128,8,n,k,w)
  from torch.profiler import profile
  with profile() as p:f();torch.cuda.synchronize()
  json.dump(sorted({e.name for e in p.events()}),open(O+"/kernels.json","w"),indent=1)
 del w;torch.cuda.empty_cache()
json.dump(dict(gpu_environment(detail=True),seconds=round(time.time()-T,1),failures=F),open(O+"/env.json","w"),indent=1)
print(open(O+"/grouped-decode.csv").read(),time.time()-T,F)
