set terminal pngcairo size 900,560 font 'sans,11' noenhanced
set output "tokens_per_gpu.png"
set title "Decode throughput per GPU vs TP\nqwen2.5-72b on gb200-nvl72, context 4096 (batch 32, bf16)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "decode tokens/s per GPU"
set logscale x 2
set xtics ("8" 8, "72" 72)
set xrange [6.15385:93.6]
set yrange [0:468.94]
set grid
set key outside right top
plot "data/series00_baseline.dat" using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "baseline", \
  "data/series01_one_tray_down.dat" using 1:2 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "one-tray-down", \
  "data/series02_slow_gpu17.dat" using 1:2 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "slow-gpu17"
