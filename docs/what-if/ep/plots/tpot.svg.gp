set terminal svg size 900,560 font 'sans,11' noenhanced
set output "tpot.svg"
set title "Time per output token vs TP\nQwen3-235B-A22B: experts tensor-parallel vs expert-parallel (batch 576, bf16)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "TPOT (ms per output token)"
set logscale x 2
set xtics ("8" 8, "72" 72)
set xrange [6.15385:93.6]
set yrange [0:61.8804]
set grid
set key outside right top
plot "data/series00_EP_1_attention_tp.dat" using 1:3 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "EP 1, attention tp", \
  "data/series01_EP_1_attention_dp.dat" using 1:3 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "EP 1, attention dp", \
  "data/series02_EP_all_attention_tp.dat" using 1:3 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "EP all, attention tp", \
  "data/series03_EP_all_attention_dp.dat" using 1:3 with linespoints lw 2 dt 4 pt 13 ps 1.3 title "EP all, attention dp"
