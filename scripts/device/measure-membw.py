import torch,sys,json,os
o=sys.argv[1];d='cuda';R=[]
def T(fs,reps=25):
 for f in fs:f()
 torch.cuda.synchronize();g=torch.cuda.CUDAGraph()
 with torch.cuda.graph(g):
  for f in fs:f()
 g.replay();torch.cuda.synchronize();t=[]
 for _ in range(reps):
  a=torch.cuda.Event(enable_timing=True);b=torch.cuda.Event(enable_timing=True)
  a.record();g.replay();b.record();b.synchronize();t.append(a.elapsed_time(b)*1e3/len(fs))
 t.sort();return t[len(t)//2]
for e in [2**k for k in range(13,30,2)]:
 nb=max(2,min(64,(600<<20)//(2*e)))
 X=[torch.randn(e,device=d,dtype=torch.bfloat16) for _ in range(nb)]
 Z=[torch.randn(e,device=d,dtype=torch.bfloat16) for _ in range(nb)]
 Y=torch.empty(e,device=d,dtype=torch.bfloat16)
 R.append(dict(op='copy',elems=e,bytes=4*e,us=T([lambda i=i:Y.copy_(X[i]) for i in range(nb)])))
 R.append(dict(op='add',elems=e,bytes=6*e,us=T([lambda i=i:torch.add(X[i],Z[i],out=Y) for i in range(nb)])))
 R.append(dict(op='triad',elems=e,bytes=6*e,us=T([lambda i=i:torch.add(X[i],Z[i],alpha=3.0,out=Y) for i in range(nb)])))
 # dependent chain of two different kernels on one tensor
 if e<=2**21:
  W=X[0].clone();R.append(dict(op='chain_add_mul',elems=e,bytes=4*e,us=T([(lambda:W.add_(1.0)) if i%2 else (lambda:W.mul_(0.5)) for i in range(64)])))
 del X,Z,Y;torch.cuda.empty_cache();print(R[-1],flush=True)
p=torch.cuda.get_device_properties(0)
json.dump(dict(gpu=p.name,sms=p.multi_processor_count,l2_MB=p.L2_cache_size/2**20,torch=torch.__version__,rows=R),open(os.path.join(o,'stream-kernels.json'),'w'),indent=1)
