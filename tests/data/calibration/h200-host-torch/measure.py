# The lent H200 host's CPU time, one thread, for an eager tiny kernel
# (x.add_(1), as [gpu] launch_overhead was measured) and one
# torch.nn.Linear forward (BF16, hidden 2048, 8192 tokens: the benchmark of
# TransformerEngine issue 2053).  Each figure: the host time of issuing N
# calls back to back (fewer than the launch queue holds, so the host never
# waits for the GPU), median, min and max of 7 repeats.  Run as it was:
#   python3 measure.py > host.csv; python3 measure.py   (a second process)
import statistics,time,torch
def h(fn,n):
    o=[]
    for _ in range(7):
        torch.cuda.synchronize();t0=time.perf_counter()
        for _ in range(n): fn()
        t1=time.perf_counter();torch.cuda.synchronize();o.append((t1-t0)/n*1e6)
    return statistics.median(o),min(o),max(o)
x=torch.zeros(1,device="cuda")
l=torch.nn.Linear(2048,2048,bias=False,device="cuda",dtype=torch.bfloat16)
a=torch.randn(8192,2048,device="cuda",dtype=torch.bfloat16)
with torch.no_grad():
    for _ in range(200): x.add_(1);l(a)
    r=[("add_",500)+h(lambda:x.add_(1),500),("linear_fwd",200)+h(lambda:l(a),200)]
print("op,calls,host_us_median,host_us_min,host_us_max,torch")
for q in r: print("%s,%d,%.3f,%.3f,%.3f,%s"%(q+(torch.__version__,)))
