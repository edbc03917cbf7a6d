import sys,time,torch,torch.nn.functional as F
sys.path.insert(0,"scripts/device");from torch_ref import _attn_block,rand as r;from measure_common import capture_graph,gpu_environment
T=time.time();O=sys.argv[1];C="cuda";E,K,V,S,D,KV,L=128,8,151936,512,128,4,4;FL=[]
class A(dict):__getattr__=dict.__getitem__
N=lambda x,w:F.rms_norm(x,x.shape[-1:],w,1e-6)
def route(x,o,ln,wr):x=x+o;h=N(x,ln);w,i=(h@wr.t()).float().softmax(-1).topk(K,-1);return x,h,(w/w.sum(-1,keepdim=True)).bfloat16(),i
CA,CR=torch.compile(_attn_block),torch.compile(route)
def srt(i):f=i.flatten();o=f.argsort(stable=True);return o//K,o,torch.zeros(E,device=C,dtype=int).scatter_add_(0,f,torch.ones_like(f)).cumsum(0).int()
def sm(g):a,b=g.chunk(2,-1);return F.silu(a)*b
G=torch._grouped_mm
P=(("attn",lambda s,l:zip("xo",CA(s.x[:,None],s.d[:,None],*l.a,s.p,s.c,s.s,l.H,KV,D,1e-6,False))),
("route",lambda s,l:zip("xhwi",CR(s.x[:,0],s.o[:,0],l.n,l.r))),("sort",lambda s,l:zip("tgf",srt(s.i))),("permute",lambda s,l:dict(y=s.h[s.t])),
("gate_up",lambda s,l:dict(u=G(s.y,l.g,offs=s.f))),("silu_mul",lambda s,l:dict(a=sm(s.u))),("down",lambda s,l:dict(e=G(s.a,l.d,offs=s.f))),
("unpermute",lambda s,l:dict(d=(0*s.x).index_add_(0,s.t,s.e*s.w.flatten()[s.g,None]))))
def tm(fn,n=20):
 try:
  g=capture_graph(fn,1);a,b=torch.cuda.Event(1),torch.cuda.Event(1);a.record()
  for _ in range(n):g.replay()
  b.record();b.synchronize();return "%.1f"%(a.elapsed_time(b)*1e3/n)
 except Exception as x:FL.append(str(x)[:200]);return "nan"
w=lambda f,*v:print(*v,sep=",",file=f,flush=True)
W1=open(O+"/steps.csv","w");w(W1,"model,layers,phase,batch,ctx,q_len,measured_us,max_count")
W2=open(O+"/parts.csv","w");w(W2,"model,layers,batch,part,us")
for j,(m,(h,H,I)) in enumerate({"qwen3-30b-a3b":(2048,32,768),"qwen3-235b-a22b":(4096,64,1536)}.items()):
 W=r(V,h);LW=[A(a=(1+r(h),r((H+2*KV)*D,h),None,1+r(D),1+r(D),r(h,H*D)),H=H,n=1+r(h),r=r(E,h),g=r(E,2*I,h).mT,d=r(E,h,I).mT) for _ in range(L)]
 for B in (1,8,32,64,128,256):
  if time.time()-T>170+180*j:break
  for l in LW:l["a"]=l.a[:6]+(r(B,KV,S,D),r(B,KV,S,D))
  ids=torch.randint(0,V,(B,),device=C);a=torch.rand(B,1,1,D,device=C)
  s0=A(p=torch.tensor([S-1],device=C),c=a.cos().bfloat16(),s=a.sin().bfloat16())
  def run(sn=None):
   s=A(s0,x=F.embedding(ids,W));s["d"]=0*s.x
   for l in LW:
    for n,f in P:
     if sn:sn[n].append(A(s))
     s.update(f(s,l))
   return s
  lm=lambda s:(N(s.x+s.d,None)@W.t()).argmax(-1);sn={n:[] for n,f in P};s=run(sn)
  w(W1,m,L,"decode",B,S,1,tm(lambda:lm(run())),int(s.f.diff().max()))
  for n,f in P:w(W2,m,L,B,n,tm(lambda:[f(q,l) for q,l in zip(sn[n],LW)]))
  w(W2,m,L,B,"lm_head",tm(lambda:lm(s)));print(m,B)
 del W,LW,sn,s;torch.cuda.empty_cache()
print(gpu_environment(),time.time()-T,FL)
