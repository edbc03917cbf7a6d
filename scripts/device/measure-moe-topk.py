# tests/data/calibration/h200-moe-topk/README.md
import csv,json,sys,time,torch
from torch.profiler import profile,ProfilerActivity as PA
O=sys.argv[1];T=time.time();C="cuda";E,K=128,8
def pr(g,n):
 with profile(activities=[PA.CUDA]) as p:
  for _ in range(n):g.replay()
  torch.cuda.synchronize()
 k={}
 for e in p.events():
  if "CUDA" in str(e.device_type):c,u=k.get(e.name,(0,0));k[e.name]=(c+1,u+e.time_range.elapsed_us())
 return [(m,c/n,u/n) for m,(c,u) in k.items()]
def cap(f,c=8):
 f();torch.cuda.synchronize();g=torch.cuda.CUDAGraph()
 with torch.cuda.graph(g):
  for _ in range(c):f()
 a,b=torch.cuda.Event(True),torch.cuda.Event(True);ts=[]
 for _ in range(30):a.record();g.replay();b.record();b.synchronize();ts.append(a.elapsed_time(b)*1e3/c)
 return g,sorted(ts)[15]
w=csv.writer(open(O+"/topk.csv","w"));w.writerow(["scale","batch","op","op_us","kernel","calls","kernel_us"])
for s in (45.0,1.0):
 for B in (1,8,64,256,1024,4096):
  lg=(torch.randn(B,E,device=C)*s).to(torch.bfloat16);p=lg.float().softmax(-1)
  for op,f in (("topk_softmax",lambda:(lambda t:t[0]/t[0].sum(-1,keepdim=True))(lg.float().softmax(-1).topk(K,-1))),("topk",lambda:p.topk(K,-1))):
   g,t=cap(f)
   for k,c,u in pr(g,5):w.writerow([s,B,op,"%.2f"%t,k,"%g"%(c/8),"%.2f"%(u/8)])
json.dump([torch.cuda.get_device_name(0),torch.__version__,torch.version.cuda,time.time()-T],open(O+"/env.json","w"))
