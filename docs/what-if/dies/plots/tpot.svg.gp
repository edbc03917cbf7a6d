set terminal svg size 900,560 font 'sans,11' noenhanced
set output "tpot.svg"
set title "Time per output token vs TP\nQwen2.5-72B: die-level vs GPU-level tensor parallelism (bf16)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "TPOT (ms per output token)"
set logscale x 2
set xtics ("4" 4, "8" 8, "16" 16, "36" 36, "72" 72)
set xrange [3.07692:93.6]
set yrange [0:27.4979]
set grid
set key outside right top
plot "data/series00_batch_8_ranks_play_gpu.dat" using 1:3 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "batch 8, ranks play gpu", \
  "data/series01_batch_8_ranks_play_die.dat" using 1:3 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "batch 8, ranks play die", \
  "data/series02_batch_64_ranks_play_gpu.dat" using 1:3 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "batch 64, ranks play gpu", \
  "data/series03_batch_64_ranks_play_die.dat" using 1:3 with linespoints lw 2 dt 4 pt 13 ps 1.3 title "batch 64, ranks play die"
