set terminal svg size 900,560 font 'sans,11' noenhanced
set output "tpot.svg"
set title "Time per output token vs TP\nQwen3-235B-A22B decode: NCCL vs one-sided all-to-all (bf16)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "TPOT (ms per output token)"
set logscale x 2
set xtics ("8" 8, "16" 16, "72" 72)
set xrange [6.15385:93.6]
set yrange [0:43.3195]
set grid
set key outside right top
plot "data/series00_batch_8_a2a_nccl.dat" using 1:3 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "batch 8, a2a nccl", \
  "data/series01_batch_8_a2a_onesided.dat" using 1:3 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "batch 8, a2a onesided", \
  "data/series02_batch_64_a2a_nccl.dat" using 1:3 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "batch 64, a2a nccl", \
  "data/series03_batch_64_a2a_onesided.dat" using 1:3 with linespoints lw 2 dt 4 pt 13 ps 1.3 title "batch 64, a2a onesided", \
  "data/series04_batch_256_a2a_nccl.dat" using 1:3 with linespoints lw 2 dt 5 pt 11 ps 1.3 title "batch 256, a2a nccl", \
  "data/series05_batch_256_a2a_onesided.dat" using 1:3 with linespoints lw 2 dt 1 pt 15 ps 1.3 title "batch 256, a2a onesided"
