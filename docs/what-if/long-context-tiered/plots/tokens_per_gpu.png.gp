set terminal pngcairo size 900,560 font 'sans,11' noenhanced
set output "tokens_per_gpu.png"
set title "Decode throughput per GPU at TP 8\nQwen2.5-72B at long context, TP 8, KV cache partly in Grace memory (bf16)"
set ylabel "decode tokens/s per GPU"
set style data histogram
set style fill solid 0.8 border -1
set boxwidth 0.7
set yrange [0:389.611]
set grid ytics
set xtics rotate by -20
set key off
plot "data/tokens_per_gpu_bars.dat" using 2:xtic(1) lc rgb '#4477aa', '' using 0:2:(sprintf('%.3g', $2)) with labels offset 0,1 notitle
