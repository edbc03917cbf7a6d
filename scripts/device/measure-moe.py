# tests/data/calibration/h100-moe/README.md
import csv,json,sys,time,torch
import torch.nn.functional as F
T0=time.time();O=sys.argv[1];BUD=270;C="cuda";bf=torch.bfloat16;f8=torch.float8_e4m3fn
MOD={"qwen3-30b-a3b":(2048,768),"qwen3-235b-a22b":(4096,1536)};E,K=128,8;BS=(1,8,64,256,1024,4096);FAIL=[]
def tm(fs,r=30):
 def run():
  for f in fs:f()
 run();torch.cuda.synchronize();g=torch.cuda.CUDAGraph()
 with torch.cuda.graph(g):run()
 a,b=torch.cuda.Event(True),torch.cuda.Event(True);ts=[]
 for _ in range(r):a.record();g.replay();b.record();b.synchronize();ts.append(a.elapsed_time(b)*1e3)
 return sorted(ts)[15]/len(fs)
def tt(fs):
 try:return "%.2f"%tm(fs)
 except Exception as x:FAIL.append(str(x)[:200]);return "nan"
w=csv.writer(open(O+"/route.csv","w"));w.writerow(["model","batch","kernel","us"])
for m,(h,I) in MOD.items():
 wr=torch.randn(E,h,device=C,dtype=bf)
 for B in BS:
  x=torch.randn(B,h,device=C,dtype=bf);lg=x@wr.t();tw,ti=lg.float().softmax(-1).topk(K,-1);fl=ti.flatten();od=fl.argsort(stable=True);tk=od//K
  hh=torch.randn(B*K,2*I,device=C,dtype=bf);d=torch.randn(B*K,h,device=C,dtype=bf);y=torch.zeros(B,h,device=C,dtype=bf);ws=tw.flatten()[od].to(bf)
  S={"router":lambda:x@wr.t(),"topk_softmax":lambda:(lambda t:t[0]/t[0].sum(-1,keepdim=True))(lg.float().softmax(-1).topk(K,-1)),
   "sort":lambda:fl.argsort(stable=True),"counts_offsets":lambda:torch.zeros(E,device=C,dtype=torch.int64).scatter_add_(0,fl,torch.ones_like(fl)).cumsum(0).int(),
   "permute":lambda:x.index_select(0,tk),"silu_mul":lambda:F.silu(hh[:,:I])*hh[:,I:],"unpermute":lambda:y.index_add_(0,tk,d*ws[:,None])}
  for k,f in S.items():w.writerow([m,B,k,tt([f]*8)])
w=csv.writer(open(O+"/grouped.csv","w"));w.writerow(["model","tp","gemm","kind","tokens_or_batch","rows","active_experts","max_count","n","k","bf16_us","fp8_us"])
gen=torch.Generator().manual_seed(1)
for m,(h,I) in MOD.items():
 for tp in (1,4,8):
  for nm,n,k in (("gate_up",2*I//tp,h),("down",h,I//tp)):
   cp=max(1,min(6,1+int(42e7//(E*n*k*2))));W=[torch.randn(E,n,k,device=C,dtype=bf) for _ in range(cp)]
   Wt=[v.transpose(-2,-1) for v in W];W8=[v.to(f8).transpose(-2,-1) for v in W[:2]]
   cs=[("uniform",t,[t]*E) for t in (1,2,4,8,16,32,64,128,256,512)]+[("routed",B,torch.bincount(torch.rand(B,E,generator=gen).topk(K,1).indices.flatten(),minlength=E).tolist()) for B in BS]
   for kd,v,c in cs:
    if time.time()-T0>BUD:break
    M=sum(c);a=torch.randn(M,k,device=C,dtype=bf);of=torch.tensor(c,device=C).cumsum(0).int();a8=a.to(f8)
    sa=torch.ones(M,device=C);sb=torch.ones(E,n,device=C)
    u=tt([lambda b=b:torch._grouped_mm(a,b,offs=of) for b in Wt]);u8=tt([lambda b=b:torch._scaled_grouped_mm(a8,b,sa,sb,offs=of,out_dtype=bf) for b in W8])
    w.writerow([m,tp,nm,kd,v,M,sum(1 for z in c if z),max(c),n,k,u,u8]);print(m,tp,nm,kd,v,u,u8,flush=True)
   del W,Wt,W8;torch.cuda.empty_cache()
json.dump([torch.cuda.get_device_name(0),torch.cuda.get_device_properties(0).multi_processor_count,torch.__version__,torch.version.cuda,time.time()-T0,FAIL[:30]],open(O+"/env.json","w"))
