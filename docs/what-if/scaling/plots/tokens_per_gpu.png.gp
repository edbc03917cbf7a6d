set terminal pngcairo size 900,560 font 'sans,11' noenhanced
set output "tokens_per_gpu.png"
set title "Decode throughput per GPU vs TP\nqwen2.5-72b on gb200-nvl72, context 4096 (bf16)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "decode tokens/s per GPU (log scale)"
set logscale x 2
set xtics ("8" 8, "16" 16, "72" 72)
set xrange [6.15385:93.6]
set logscale y
set yrange [0.974184:669.915]
set grid
set key outside right top
plot "data/series00_batch_1.dat" using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "batch 1", \
  "data/series01_batch_32.dat" using 1:2 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "batch 32"
