# tests/data/calibration/h200-fp8-scaled-mm/README.md
import csv,json,sys,time,torch
import torch.nn.functional as F
from torch.profiler import profile,ProfilerActivity,record_function
T0=time.time();O=sys.argv[1];BUD=400;C="cuda";bf=torch.bfloat16;f8=torch.float8_e4m3fn;FAIL=[]
MOD={"qwen2.5-7b":(3584,28,4,18944),"qwen2.5-72b":(8192,64,8,29568)}
MS=(64,128,256,512);one=torch.ones((),device=C)
def kern(e,out,seen):
 if id(e) in seen:return
 seen.add(id(e))
 if not e.name.startswith("cuda"):
  for k in e.kernels:out.append((k.name,k.duration))
 for c in e.cpu_children:kern(c,out,seen)
def tm(fs,r=20):
 def run():
  for f in fs:f()
 run();torch.cuda.synchronize();g=torch.cuda.CUDAGraph()
 with torch.cuda.graph(g):run()
 a,b=torch.cuda.Event(True),torch.cuda.Event(True);ts=[]
 for _ in range(r):a.record();g.replay();b.record();b.synchronize();ts.append(a.elapsed_time(b)*1e3)
 return sorted(ts)[r//2]/len(fs)
w=csv.writer(open(O+"/scaled-mm.csv","w"));w.writerow(["model","tp","op","m","n","k","scaling","us","kernels","kernel_us","kernel_names"])
for mo,(h,qh,kv,I) in MOD.items():
 for tp in (1,2,4,8):
  for op,n,k in (("qkv",(qh+2*kv)*128//tp,h),("o",h,qh*128//tp),("gate_up",2*I//tp,h),("down",h,I//tp)):
   if time.time()-T0>BUD:break
   cp=max(2,min(16,1+int(3e8//(n*k))));W8=[torch.randn(n,k,device=C,dtype=bf).to(f8) for _ in range(cp)]
   sb=torch.rand(1,n,device=C)+.5;fn={}
   for m in MS:
    x8=torch.randn(m,k,device=C,dtype=bf).to(f8);sa=torch.rand(m,1,device=C)+.5
    fn[(m,"tensor")]=[lambda x8=x8,v=v:torch._scaled_mm(x8,v.t(),one,one,out_dtype=bf) for v in W8]
    fn[(m,"row")]=[lambda x8=x8,v=v,sa=sa:torch._scaled_mm(x8,v.t(),sa,sb,out_dtype=bf) for v in W8]
   us={}
   for key,fs in fn.items():
    try:us[key]="%.2f"%tm(fs)
    except Exception as e:FAIL.append(str(e)[:200]);us[key]="nan"
   ks={}
   try:
    for fs in fn.values():fs[0]()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU,ProfilerActivity.CUDA]) as p:
     for (m,s),fs in fn.items():
      with record_function("nvl|%d|%s"%(m,s)):fs[0]()
      torch.cuda.synchronize()
    ev=p.events();gpu=[e for e in ev if e.device_type.name=="CUDA" and not e.name.startswith("nvl|")]
    for e in ev:
     if e.name.startswith("nvl|"):
      _,m,s=e.name.split("|");o=ks.setdefault((int(m),s),[])
      if e.device_type.name=="CUDA":
       if not o:o+=[(g.name,g.time_range.end-g.time_range.start) for g in gpu if e.time_range.start<=g.time_range.start<e.time_range.end]
      elif not o:kern(e,o,set())
   except Exception as e:FAIL.append(str(e)[:200])
   for (m,s) in fn:
    o=ks.get((m,s),[])
    w.writerow([mo,tp,op,m,n,k,s,us[(m,s)],len(o),";".join("%.2f"%d for _,d in o),";".join(nm[:160] for nm,_ in o)])
   print(mo,tp,op,n,k,time.time()-T0,flush=True)
   del W8,fn;torch.cuda.empty_cache()
json.dump({"gpu":torch.cuda.get_device_name(0),"sms":torch.cuda.get_device_properties(0).multi_processor_count,"torch":torch.__version__,"cuda":torch.version.cuda,"seconds":time.time()-T0,"failures":FAIL[:30]},open(O+"/env.json","w"))
