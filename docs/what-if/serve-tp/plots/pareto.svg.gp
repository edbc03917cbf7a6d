set terminal svg size 1100,620 font 'sans,11' noenhanced
set output "pareto.svg"
set title "Output tokens/s per GPU vs tokens/s per user\nQwen2.5-72B on the GB200 NVL72: TP 8, 16 or 72\nSLO: TTFT <= 2000 ms, TPOT <= 50 ms for 90% of requests"
set xlabel 'tokens/s per user (1 / TPOT)'
set ylabel 'output tokens/s per GPU'
set grid
set xrange [0:253.156]
set yrange [0:707.532]
set arrow from 20, graph 0 to 20, graph 1 nohead dt 3 lc rgb '#888888'
set arrow from 50, graph 0 to 50, graph 1 nohead dt 3 lc rgb '#888888'
set arrow from 100, graph 0 to 100, graph 1 nohead dt 3 lc rgb '#888888'
set key outside right top
plot "data/serve00_TP_8_x_9.dat" using 1:2 with lines lw 1 dt 2 lc rgb '#4477aa' notitle, \
  "data/serve00_TP_8_x_9.dat" using 1:($3 > 0 ? $2 : 1/0) with points pt 7 ps 1.1 lc rgb '#4477aa' title "TP 8 x 9", \
  "data/serve00_TP_8_x_9.dat" using 1:($3 > 0 ? 1/0 : $2) with points pt 6 ps 1.1 lc rgb '#4477aa' notitle, \
  "data/serve01_TP_16_x_4.dat" using 1:2 with lines lw 1 dt 2 lc rgb '#ee6677' notitle, \
  "data/serve01_TP_16_x_4.dat" using 1:($3 > 0 ? $2 : 1/0) with points pt 5 ps 1.1 lc rgb '#ee6677' title "TP 16 x 4", \
  "data/serve01_TP_16_x_4.dat" using 1:($3 > 0 ? 1/0 : $2) with points pt 4 ps 1.1 lc rgb '#ee6677' notitle, \
  "data/serve02_TP_72_x_1.dat" using 1:2 with lines lw 1 dt 2 lc rgb '#228833' notitle, \
  "data/serve02_TP_72_x_1.dat" using 1:($3 > 0 ? $2 : 1/0) with points pt 9 ps 1.1 lc rgb '#228833' title "TP 72 x 1", \
  "data/serve02_TP_72_x_1.dat" using 1:($3 > 0 ? 1/0 : $2) with points pt 8 ps 1.1 lc rgb '#228833' notitle, \
  "data/front.dat" using 1:2 with linespoints lw 3 pt 7 ps 1.4 lc rgb 'black' title 'Pareto front (meets the SLO)', \
  1/0 with points pt 6 ps 1.1 lc rgb '#888888' title 'hollow: misses the SLO'
