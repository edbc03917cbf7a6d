set terminal pngcairo size 1000,600 font 'sans,11' noenhanced
set output "busbw.png"
set title "all_reduce_perf bus bandwidth vs size, one curve per NCCL_ALGO/NCCL_PROTO\ngb200-nvl72, 8 rank(s)"
set xlabel 'message size (bytes, powers of 1024)'
set ylabel 'bus bandwidth (GB/s)'
set logscale x 2
set xtics ("8 B" 8, "256 B" 256, "8 KB" 8192, "256 KB" 262144, "8 MB" 8388608, "256 MB" 268435456)
set grid
set yrange [0:*]
set key inside left top box opaque
plot "data/all_reduce_perf_n8_Ring_LL.dat" using 1:4 with lines lw 2 dt 1 lc rgb '#4477aa' title "Ring/LL", \
  "data/all_reduce_perf_n8_Ring_LL128.dat" using 1:4 with lines lw 2 dt 2 lc rgb '#4477aa' title "Ring/LL128", \
  "data/all_reduce_perf_n8_Ring_Simple.dat" using 1:4 with lines lw 2 dt 3 lc rgb '#4477aa' title "Ring/Simple", \
  "data/all_reduce_perf_n8_Tree_LL.dat" using 1:4 with lines lw 2 dt 1 lc rgb '#228833' title "Tree/LL", \
  "data/all_reduce_perf_n8_Tree_LL128.dat" using 1:4 with lines lw 2 dt 2 lc rgb '#228833' title "Tree/LL128", \
  "data/all_reduce_perf_n8_Tree_Simple.dat" using 1:4 with lines lw 2 dt 3 lc rgb '#228833' title "Tree/Simple", \
  "data/all_reduce_perf_n8_NVLS_Simple.dat" using 1:4 with lines lw 2 dt 3 lc rgb '#ee6677' title "NVLS/Simple"
