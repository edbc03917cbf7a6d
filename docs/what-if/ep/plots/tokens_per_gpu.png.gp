set terminal pngcairo size 900,560 font 'sans,11' noenhanced
set output "tokens_per_gpu.png"
set title "Decode throughput per GPU vs TP\nQwen3-235B-A22B: experts tensor-parallel vs expert-parallel (batch 576, bf16)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "decode tokens/s per GPU"
set logscale x 2
set xtics ("8" 8, "72" 72)
set xrange [6.15385:93.6]
set yrange [0:2061.09]
set grid
set key outside right top
plot "data/series00_EP_1_attention_tp.dat" using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "EP 1, attention tp", \
  "data/series01_EP_1_attention_dp.dat" using 1:2 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "EP 1, attention dp", \
  "data/series02_EP_all_attention_tp.dat" using 1:2 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "EP all, attention tp", \
  "data/series03_EP_all_attention_dp.dat" using 1:2 with linespoints lw 2 dt 4 pt 13 ps 1.3 title "EP all, attention dp"
