set terminal svg size 2000,560 font 'sans,11' noenhanced
set output "breakdown.svg"
set title "Where a decode step's time goes, per TP\nQwen2.5-72B decode, batch 128: allreduce implementations (batch 128, bf16)"
set ylabel 'ms per decode step (mean over ranks)'
set style data histogram
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set yrange [0:*]
set grid ytics
set key outside right top title 'part of the step'
set xtics rotate by -30
plot "data/breakdown.dat" using 2:xtic(1) lc rgb '#4477aa' title "gemm", \
  '' using 3 lc rgb '#66ccee' title "attention", \
  '' using 4 lc rgb '#ee6677' title "collective", \
  '' using 5 lc rgb '#228833' title "other", \
  '' using 6 lc rgb '#ccbb44' title "launch (GPU waits for host)", \
  '' using 7 lc rgb '#bbbbbb' title "wait (waits for slower ranks)"
