# tests/data/calibration/h200-gemm-clocks/README.md
import csv,json,subprocess,sys,threading,time,torch
import torch.nn.functional as F
T0=time.time();O=sys.argv[1];C="cuda";bf=torch.bfloat16;f8=torch.float8_e4m3fn;S=[];STOP=[0]
Q="--query-gpu=clocks.sm,power.draw,clocks.max.sm,power.limit"
def smi():
 while not STOP[0]:
  r=subprocess.run(["nvidia-smi",Q,"--format=csv,noheader,nounits"],capture_output=True,text=True).stdout.split(",")
  try:S.append((time.time(),float(r[0]),float(r[1]),float(r[2]),float(r[3])))
  except Exception:pass
th=threading.Thread(target=smi);th.start();time.sleep(1.0)
one=torch.ones((),device=C)
def fns(kind,m,n,k):
 cp=max(2,min(16,1+int(3e8//(n*k))))
 if kind=="bf16":
  W=[torch.randn(n,k,device=C,dtype=bf) for _ in range(cp)];x=torch.randn(m,k,device=C,dtype=bf)
  return [lambda v=v:F.linear(x,v) for v in W]
 W=[torch.randn(n,k,device=C,dtype=bf).to(f8) for _ in range(cp)];x=torch.randn(m,k,device=C,dtype=bf).to(f8)
 if kind=="fp8-tensor":return [lambda v=v:torch._scaled_mm(x,v.t(),one,one,out_dtype=bf) for v in W]
 sa=torch.rand(m,1,device=C)+.5;sb=torch.rand(1,n,device=C)+.5
 return [lambda v=v:torch._scaled_mm(x,v.t(),sa,sb,out_dtype=bf) for v in W]
w=csv.writer(open(O+"/clocks.csv","w"))
w.writerow(["kind","m","n","k","us","replays","sm_mhz","power_w","samples"])
SH=[("fp8-row",128,1024,16384),("fp8-row",128,4096,16384),("fp8-row",128,16384,16384),("fp8-row",256,16384,16384),
    ("fp8-row",8192,8192,8192),("fp8-tensor",8192,8192,8192),("bf16",8192,8192,8192),("idle",0,0,0)]
for kind,m,n,k in SH:
 if kind=="idle":
  t0=time.time();time.sleep(1.5);t1=time.time();us=0;r=0
 else:
  fs=fns(kind,m,n,k)
  def run():
   for f in fs:f()
  run();torch.cuda.synchronize();g=torch.cuda.CUDAGraph()
  with torch.cuda.graph(g):run()
  g.replay();torch.cuda.synchronize();a,b=torch.cuda.Event(True),torch.cuda.Event(True)
  t0=time.time();ts=[];r=0
  while time.time()-t0<2.0:
   a.record();g.replay();b.record();b.synchronize();ts.append(a.elapsed_time(b)*1e3/len(fs));r+=1
  t1=time.time();us=sorted(ts)[len(ts)//2]
  del fs,g;torch.cuda.empty_cache()
 s=[x for x in S if t0+0.3<=x[0]<=t1]
 med=lambda i:sorted(x[i] for x in s)[len(s)//2] if s else float("nan")
 w.writerow([kind,m,n,k,"%.2f"%us,r,med(1),med(2),len(s)]);print(kind,m,n,k,us,med(1),med(2),len(s),flush=True)
STOP[0]=1;th.join()
json.dump({"gpu":torch.cuda.get_device_name(0),"sms":torch.cuda.get_device_properties(0).multi_processor_count,"torch":torch.__version__,"cuda":torch.version.cuda,"max_sm_mhz":S[-1][3] if S else None,"power_limit_w":S[-1][4] if S else None,"seconds":time.time()-T0},open(O+"/env.json","w"))
