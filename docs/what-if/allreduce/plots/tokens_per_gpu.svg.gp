set terminal svg size 900,560 font 'sans,11' noenhanced
set output "tokens_per_gpu.svg"
set title "Decode throughput per GPU vs TP\nQwen2.5-72B decode: allreduce implementations (bf16)"
set xlabel 'tensor-parallel degree (TP = GPUs per model copy)'
set ylabel "decode tokens/s per GPU (log scale)"
set logscale x 2
set xtics ("8" 8, "16" 16, "72" 72)
set xrange [6.15385:93.6]
set logscale y
set yrange [0.510317:3281.19]
set grid
set key outside right top
plot "data/series00_batch_1_allreduce_nccl_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "batch 1, allreduce nccl, fused norm no", \
  "data/series01_batch_1_allreduce_oneshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "batch 1, allreduce oneshot, fused norm no", \
  "data/series02_batch_1_allreduce_oneshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "batch 1, allreduce oneshot, fused norm yes", \
  "data/series03_batch_1_allreduce_twoshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 4 pt 13 ps 1.3 title "batch 1, allreduce twoshot, fused norm no", \
  "data/series04_batch_1_allreduce_twoshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 5 pt 11 ps 1.3 title "batch 1, allreduce twoshot, fused norm yes", \
  "data/series05_batch_1_allreduce_nvls_oneshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 1 pt 15 ps 1.3 title "batch 1, allreduce nvls-oneshot, fused norm no", \
  "data/series06_batch_1_allreduce_nvls_oneshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 2 pt 7 ps 1.3 title "batch 1, allreduce nvls-oneshot, fused norm yes", \
  "data/series07_batch_1_allreduce_nvls_twoshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 3 pt 5 ps 1.3 title "batch 1, allreduce nvls-twoshot, fused norm no", \
  "data/series08_batch_1_allreduce_nvls_twoshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 4 pt 9 ps 1.3 title "batch 1, allreduce nvls-twoshot, fused norm yes", \
  "data/series09_batch_1_allreduce_auto_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 5 pt 13 ps 1.3 title "batch 1, allreduce auto, fused norm no", \
  "data/series10_batch_1_allreduce_auto_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 1 pt 11 ps 1.3 title "batch 1, allreduce auto, fused norm yes", \
  "data/series11_batch_8_allreduce_nccl_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 2 pt 15 ps 1.3 title "batch 8, allreduce nccl, fused norm no", \
  "data/series12_batch_8_allreduce_oneshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 3 pt 7 ps 1.3 title "batch 8, allreduce oneshot, fused norm no", \
  "data/series13_batch_8_allreduce_oneshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 4 pt 5 ps 1.3 title "batch 8, allreduce oneshot, fused norm yes", \
  "data/series14_batch_8_allreduce_twoshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 5 pt 9 ps 1.3 title "batch 8, allreduce twoshot, fused norm no", \
  "data/series15_batch_8_allreduce_twoshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 1 pt 13 ps 1.3 title "batch 8, allreduce twoshot, fused norm yes", \
  "data/series16_batch_8_allreduce_nvls_oneshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 2 pt 11 ps 1.3 title "batch 8, allreduce nvls-oneshot, fused norm no", \
  "data/series17_batch_8_allreduce_nvls_oneshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 3 pt 15 ps 1.3 title "batch 8, allreduce nvls-oneshot, fused norm yes", \
  "data/series18_batch_8_allreduce_nvls_twoshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 4 pt 7 ps 1.3 title "batch 8, allreduce nvls-twoshot, fused norm no", \
  "data/series19_batch_8_allreduce_nvls_twoshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 5 pt 5 ps 1.3 title "batch 8, allreduce nvls-twoshot, fused norm yes", \
  "data/series20_batch_8_allreduce_auto_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 1 pt 9 ps 1.3 title "batch 8, allreduce auto, fused norm no", \
  "data/series21_batch_8_allreduce_auto_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 2 pt 13 ps 1.3 title "batch 8, allreduce auto, fused norm yes", \
  "data/series22_batch_32_allreduce_nccl_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 3 pt 11 ps 1.3 title "batch 32, allreduce nccl, fused norm no", \
  "data/series23_batch_32_allreduce_oneshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 4 pt 15 ps 1.3 title "batch 32, allreduce oneshot, fused norm no", \
  "data/series24_batch_32_allreduce_oneshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 5 pt 7 ps 1.3 title "batch 32, allreduce oneshot, fused norm yes", \
  "data/series25_batch_32_allreduce_twoshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 1 pt 5 ps 1.3 title "batch 32, allreduce twoshot, fused norm no", \
  "data/series26_batch_32_allreduce_twoshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 2 pt 9 ps 1.3 title "batch 32, allreduce twoshot, fused norm yes", \
  "data/series27_batch_32_allreduce_nvls_oneshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 3 pt 13 ps 1.3 title "batch 32, allreduce nvls-oneshot, fused norm no", \
  "data/series28_batch_32_allreduce_nvls_oneshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 4 pt 11 ps 1.3 title "batch 32, allreduce nvls-oneshot, fused norm yes", \
  "data/series29_batch_32_allreduce_nvls_twoshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 5 pt 15 ps 1.3 title "batch 32, allreduce nvls-twoshot, fused norm no", \
  "data/series30_batch_32_allreduce_nvls_twoshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 1 pt 7 ps 1.3 title "batch 32, allreduce nvls-twoshot, fused norm yes", \
  "data/series31_batch_32_allreduce_auto_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 2 pt 5 ps 1.3 title "batch 32, allreduce auto, fused norm no", \
  "data/series32_batch_32_allreduce_auto_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 3 pt 9 ps 1.3 title "batch 32, allreduce auto, fused norm yes", \
  "data/series33_batch_128_allreduce_nccl_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 4 pt 13 ps 1.3 title "batch 128, allreduce nccl, fused norm no", \
  "data/series34_batch_128_allreduce_oneshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 5 pt 11 ps 1.3 title "batch 128, allreduce oneshot, fused norm no", \
  "data/series35_batch_128_allreduce_oneshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 1 pt 15 ps 1.3 title "batch 128, allreduce oneshot, fused norm yes", \
  "data/series36_batch_128_allreduce_twoshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 2 pt 7 ps 1.3 title "batch 128, allreduce twoshot, fused norm no", \
  "data/series37_batch_128_allreduce_twoshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 3 pt 5 ps 1.3 title "batch 128, allreduce twoshot, fused norm yes", \
  "data/series38_batch_128_allreduce_nvls_oneshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 4 pt 9 ps 1.3 title "batch 128, allreduce nvls-oneshot, fused norm no", \
  "data/series39_batch_128_allreduce_nvls_oneshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 5 pt 13 ps 1.3 title "batch 128, allreduce nvls-oneshot, fused norm yes", \
  "data/series40_batch_128_allreduce_nvls_twoshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 1 pt 11 ps 1.3 title "batch 128, allreduce nvls-twoshot, fused norm no", \
  "data/series41_batch_128_allreduce_nvls_twoshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 2 pt 15 ps 1.3 title "batch 128, allreduce nvls-twoshot, fused norm yes", \
  "data/series42_batch_128_allreduce_auto_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 3 pt 7 ps 1.3 title "batch 128, allreduce auto, fused norm no", \
  "data/series43_batch_128_allreduce_auto_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 4 pt 5 ps 1.3 title "batch 128, allreduce auto, fused norm yes", \
  "data/series44_batch_256_allreduce_nccl_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 5 pt 9 ps 1.3 title "batch 256, allreduce nccl, fused norm no", \
  "data/series45_batch_256_allreduce_oneshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 1 pt 13 ps 1.3 title "batch 256, allreduce oneshot, fused norm no", \
  "data/series46_batch_256_allreduce_oneshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 2 pt 11 ps 1.3 title "batch 256, allreduce oneshot, fused norm yes", \
  "data/series47_batch_256_allreduce_twoshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 3 pt 15 ps 1.3 title "batch 256, allreduce twoshot, fused norm no", \
  "data/series48_batch_256_allreduce_twoshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 4 pt 7 ps 1.3 title "batch 256, allreduce twoshot, fused norm yes", \
  "data/series49_batch_256_allreduce_nvls_oneshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 5 pt 5 ps 1.3 title "batch 256, allreduce nvls-oneshot, fused norm no", \
  "data/series50_batch_256_allreduce_nvls_oneshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 1 pt 9 ps 1.3 title "batch 256, allreduce nvls-oneshot, fused norm yes", \
  "data/series51_batch_256_allreduce_nvls_twoshot_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 2 pt 13 ps 1.3 title "batch 256, allreduce nvls-twoshot, fused norm no", \
  "data/series52_batch_256_allreduce_nvls_twoshot_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 3 pt 11 ps 1.3 title "batch 256, allreduce nvls-twoshot, fused norm yes", \
  "data/series53_batch_256_allreduce_auto_fused_norm_no.dat" using 1:2 with linespoints lw 2 dt 4 pt 15 ps 1.3 title "batch 256, allreduce auto, fused norm no", \
  "data/series54_batch_256_allreduce_auto_fused_norm_yes.dat" using 1:2 with linespoints lw 2 dt 5 pt 7 ps 1.3 title "batch 256, allreduce auto, fused norm yes"
