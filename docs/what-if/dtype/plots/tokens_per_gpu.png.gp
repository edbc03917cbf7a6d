set terminal pngcairo size 900,560 font 'sans,11' noenhanced
set output "tokens_per_gpu.png"
set title "Decode throughput per GPU vs TP\nqwen2.5-72b on gb200-nvl72, context 4096 (batch 32)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "decode tokens/s per GPU"
set logscale x 2
set xtics ("4" 4, "8" 8, "16" 16)
set xrange [3.07692:20.8]
set yrange [0:1084.4]
set grid
set key outside right top
plot "data/series00_bf16.dat" using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "bf16", \
  "data/series01_fp8.dat" using 1:2 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "fp8", \
  "data/series02_fp4.dat" using 1:2 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "fp4"
