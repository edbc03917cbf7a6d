# tests/data/calibration/h200-moe-compiled/README.md
import csv,textwrap
Q=open("scripts/device/measure-moe-step.py").read();exec(Q.split("def tm")[0])
i=Q.index('  for l in LW:l["a"]');Y=textwrap.dedent(Q[i:Q.index("\n",Q.index("s=run(sn)"))])
from torch.profiler import profile,ProfilerActivity as PA
bf=torch.bfloat16
def pr(f,n):
 with profile(activities=[PA.CUDA]) as p:
  for _ in range(n):f()
  torch.cuda.synchronize()
 k={}
 for e in p.events():
  if "CUDA" in str(e.device_type):c,u=k.get(e.name,(0,0));k[e.name]=(c+1,u+e.time_range.elapsed_us())
 return [(m,c/n,u/n) for m,(c,u) in k.items()]
def pf(fn,n=10):
 try:
  g=capture_graph(fn,1);a,b=torch.cuda.Event(1),torch.cuda.Event(1);a.record()
  for _ in range(20):g.replay()
  b.record();b.synchronize();return a.elapsed_time(b)*1e3/20,pr(g.replay,n) or pr(fn,n)
 except Exception as x:FL.append(str(x)[:200]);return float("nan"),[]
W1=csv.writer(open(O+"/kernels.csv","w"));W1.writerow(["model","layers","batch","part","part_us","kernel","calls","kernel_us"])
for j,(m,(h,H,I),BS) in enumerate((("qwen3-30b-a3b",(2048,32,768),(1,8,32,128,256)),("qwen3-235b-a22b",(4096,64,1536),(8,64)))):
 W=r(V,h);LW=[A(a=(1+r(h),r((H+2*KV)*D,h),None,1+r(D),1+r(D),r(h,H*D)),H=H,n=1+r(h),r=r(E,h),g=r(E,2*I,h).mT,d=r(E,h,I).mT) for _ in range(L)]
 for B in BS:
  if time.time()-T>200+100*j:break
  exec(Y)
  for n,fn in [("step",lambda:lm(run()))]+[(n,lambda f=f,n=n:[f(q,l) for q,l in zip(sn[n],LW)]) for n,f in P]+[("lm_head",lambda:lm(s))]:
   t,ks=pf(fn)
   for k,c,u in ks:W1.writerow([m,L,B,n,"%.1f"%t,k,"%g"%c,"%.2f"%u])
  print(m,B,flush=True)
 del W,LW,sn,s;torch.cuda.empty_cache()
W1=csv.writer(open(O+"/fp8-tile.csv","w"));W1.writerow(["experts","rows_per_expert","n","k","dtype","fast_accum","us","kernel"])
for e,n,k,ts in ((16,4096,1536,(96,128,144,192,256,2048)),(16,3072,4096,(128,192,256)),(128,1536,2048,(128,256,2048)),(128,2048,768,(256,))):
 w=torch.randn(e,n,k,device=C,dtype=bf);w8=w.to(torch.float8_e4m3fn)
 for t in ts:
  x=torch.randn(e*t,k,device=C,dtype=bf);x8=x.to(w8.dtype);o=torch.full((e,),t,device=C,dtype=torch.int32).cumsum(0).int();sa,sb=torch.ones(e*t,device=C),torch.ones(e,n,device=C)
  for dt,fa,fn in (("bf16",0,lambda:G(x,w.mT,offs=o)),("fp8",0,lambda:torch._scaled_grouped_mm(x8,w8.mT,sa,sb,offs=o,out_dtype=bf)),("fp8",1,lambda:torch._scaled_grouped_mm(x8,w8.mT,sa,sb,offs=o,out_dtype=bf,use_fast_accum=True))):
   u,ks=pf(fn,3);W1.writerow([e,t,n,k,dt,fa,"%.1f"%u,"|".join(q for q,c,v in ks)])
 del w,w8
print(gpu_environment(),time.time()-T,FL)
