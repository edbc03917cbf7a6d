set terminal svg size 900,560 font 'sans,11' noenhanced
set output "tokens_per_gpu.svg"
set title "Decode throughput per GPU at TP 72\nqwen2.5-72b on gb200-nvl72, context 4096 (bf16)"
set ylabel "decode tokens/s per GPU"
set style data histogram
set style fill solid 0.8 border -1
set boxwidth 0.7
set yrange [0:49.18]
set grid ytics
set xtics rotate by -20
set key off
plot "data/tokens_per_gpu_bars.dat" using 2:xtic(1) lc rgb '#4477aa', '' using 0:2:(sprintf('%.3g', $2)) with labels offset 0,1 notitle
