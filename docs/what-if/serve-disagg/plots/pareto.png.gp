set terminal pngcairo size 1100,620 font 'sans,11' noenhanced
set output "pareto.png"
set title "Output tokens/s per GPU vs tokens/s per user\nQwen3-235B-A22B on 16 GPUs: aggregated or disaggregated\nSLO: TTFT <= 1000 ms, TPOT <= 30 ms for 90% of requests"
set xlabel 'tokens/s per user (1 / TPOT)'
set ylabel 'output tokens/s per GPU'
set grid
set xrange [0:66]
set yrange [0:293.287]
set arrow from 20, graph 0 to 20, graph 1 nohead dt 3 lc rgb '#888888'
set arrow from 40, graph 0 to 40, graph 1 nohead dt 3 lc rgb '#888888'
set arrow from 60, graph 0 to 60, graph 1 nohead dt 3 lc rgb '#888888'
set key outside right top
plot "data/serve00_TP_8_x_2_EP_8.dat" using 1:2 with lines lw 1 dt 2 lc rgb '#4477aa' notitle, \
  "data/serve00_TP_8_x_2_EP_8.dat" using 1:($3 > 0 ? $2 : 1/0) with points pt 7 ps 1.1 lc rgb '#4477aa' title "TP 8 x 2, EP 8", \
  "data/serve00_TP_8_x_2_EP_8.dat" using 1:($3 > 0 ? 1/0 : $2) with points pt 6 ps 1.1 lc rgb '#4477aa' notitle, \
  "data/serve01_disagg_8_TP_8_8_TP_8_EP_8.dat" using 1:2 with lines lw 1 dt 2 lc rgb '#ee6677' notitle, \
  "data/serve01_disagg_8_TP_8_8_TP_8_EP_8.dat" using 1:($3 > 0 ? $2 : 1/0) with points pt 5 ps 1.1 lc rgb '#ee6677' title "disagg 8 (TP 8) : 8 (TP 8), EP 8", \
  "data/serve01_disagg_8_TP_8_8_TP_8_EP_8.dat" using 1:($3 > 0 ? 1/0 : $2) with points pt 4 ps 1.1 lc rgb '#ee6677' notitle, \
  "data/serve02_disagg_4_TP_4_12_3_x_TP_4_EP_4.dat" using 1:2 with lines lw 1 dt 2 lc rgb '#228833' notitle, \
  "data/serve02_disagg_4_TP_4_12_3_x_TP_4_EP_4.dat" using 1:($3 > 0 ? $2 : 1/0) with points pt 9 ps 1.1 lc rgb '#228833' title "disagg 4 (TP 4) : 12 (3 x TP 4), EP 4", \
  "data/serve02_disagg_4_TP_4_12_3_x_TP_4_EP_4.dat" using 1:($3 > 0 ? 1/0 : $2) with points pt 8 ps 1.1 lc rgb '#228833' notitle, \
  "data/serve03_disagg_12_3_x_TP_4_4_TP_4_EP_4.dat" using 1:2 with lines lw 1 dt 2 lc rgb '#ccbb44' notitle, \
  "data/serve03_disagg_12_3_x_TP_4_4_TP_4_EP_4.dat" using 1:($3 > 0 ? $2 : 1/0) with points pt 13 ps 1.1 lc rgb '#ccbb44' title "disagg 12 (3 x TP 4) : 4 (TP 4), EP 4", \
  "data/serve03_disagg_12_3_x_TP_4_4_TP_4_EP_4.dat" using 1:($3 > 0 ? 1/0 : $2) with points pt 12 ps 1.1 lc rgb '#ccbb44' notitle, \
  "data/front.dat" using 1:2 with linespoints lw 3 pt 7 ps 1.4 lc rgb 'black' title 'Pareto front (meets the SLO)', \
  1/0 with points pt 6 ps 1.1 lc rgb '#888888' title 'hollow: misses the SLO'
