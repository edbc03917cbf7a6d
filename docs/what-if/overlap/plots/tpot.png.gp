set terminal pngcairo size 900,560 font 'sans,11' noenhanced
set output "tpot.png"
set title "Time per output token vs TP\nQwen2.5-72B decode: async TP overlap (bf16)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "TPOT (ms per output token)"
set logscale x 2
set xtics ("8" 8, "16" 16, "72" 72)
set xrange [6.15385:93.6]
set yrange [0:37.0818]
set grid
set key outside right top
plot "data/series00_batch_1_overlap_none.dat" using 1:3 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "batch 1, overlap none", \
  "data/series01_batch_1_overlap_async_tp.dat" using 1:3 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "batch 1, overlap async-tp", \
  "data/series02_batch_8_overlap_none.dat" using 1:3 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "batch 8, overlap none", \
  "data/series03_batch_8_overlap_async_tp.dat" using 1:3 with linespoints lw 2 dt 4 pt 13 ps 1.3 title "batch 8, overlap async-tp", \
  "data/series04_batch_32_overlap_none.dat" using 1:3 with linespoints lw 2 dt 5 pt 11 ps 1.3 title "batch 32, overlap none", \
  "data/series05_batch_32_overlap_async_tp.dat" using 1:3 with linespoints lw 2 dt 1 pt 15 ps 1.3 title "batch 32, overlap async-tp", \
  "data/series06_batch_128_overlap_none.dat" using 1:3 with linespoints lw 2 dt 2 pt 7 ps 1.3 title "batch 128, overlap none", \
  "data/series07_batch_128_overlap_async_tp.dat" using 1:3 with linespoints lw 2 dt 3 pt 5 ps 1.3 title "batch 128, overlap async-tp"
