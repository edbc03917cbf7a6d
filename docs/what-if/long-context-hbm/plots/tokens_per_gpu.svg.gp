set terminal svg size 900,560 font 'sans,11' noenhanced
set output "tokens_per_gpu.svg"
set title "Decode throughput per GPU vs TP\nQwen2.5-72B at long context, HBM only (bf16)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "decode tokens/s per GPU (log scale)"
set logscale x 2
set xtics ("8" 8, "16" 16, "72" 72)
set xrange [6.15385:93.6]
set logscale y
set yrange [5.74768:542.067]
set grid
set key outside right top
plot "data/series00_batch_16_ctx_32768.dat" using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "batch 16, ctx 32768", \
  "data/series01_batch_16_ctx_65536.dat" using 1:2 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "batch 16, ctx 65536", \
  "data/series02_batch_16_ctx_131072.dat" using 1:2 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "batch 16, ctx 131072", \
  "data/series03_batch_32_ctx_32768.dat" using 1:2 with linespoints lw 2 dt 4 pt 13 ps 1.3 title "batch 32, ctx 32768", \
  "data/series04_batch_32_ctx_65536.dat" using 1:2 with linespoints lw 2 dt 5 pt 11 ps 1.3 title "batch 32, ctx 65536", \
  "data/series05_batch_64_ctx_32768.dat" using 1:2 with linespoints lw 2 dt 1 pt 15 ps 1.3 title "batch 64, ctx 32768", \
  "data/series06_batch_32_ctx_131072.dat" using 1:2 with linespoints lw 2 dt 2 pt 7 ps 1.3 title "batch 32, ctx 131072", \
  "data/series07_batch_64_ctx_65536.dat" using 1:2 with linespoints lw 2 dt 3 pt 5 ps 1.3 title "batch 64, ctx 65536", \
  "data/series08_batch_128_ctx_32768.dat" using 1:2 with linespoints lw 2 dt 4 pt 9 ps 1.3 title "batch 128, ctx 32768"
