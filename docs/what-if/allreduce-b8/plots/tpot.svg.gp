set terminal svg size 900,560 font 'sans,11' noenhanced
set output "tpot.svg"
set title "Time per output token vs TP\nQwen2.5-72B decode, batch 8: allreduce implementations (batch 8, bf16)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "TPOT (ms per output token)"
set logscale x 2
set xtics ("8" 8, "16" 16, "72" 72)
set xrange [6.15385:93.6]
set yrange [0:19.2858]
set grid
set key outside right top
plot "data/series00_allreduce_nccl.dat" using 1:3 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "allreduce nccl", \
  "data/series01_allreduce_oneshot.dat" using 1:3 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "allreduce oneshot", \
  "data/series02_allreduce_twoshot.dat" using 1:3 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "allreduce twoshot", \
  "data/series03_allreduce_nvls_oneshot.dat" using 1:3 with linespoints lw 2 dt 4 pt 13 ps 1.3 title "allreduce nvls-oneshot", \
  "data/series04_allreduce_nvls_twoshot.dat" using 1:3 with linespoints lw 2 dt 5 pt 11 ps 1.3 title "allreduce nvls-twoshot"
