set terminal pngcairo size 900,560 noenhanced
set output 'rand-read.png'
set title 'Random read, QD 8: IOPS against block size'
set xlabel 'block size'
set ylabel 'IOPS'
set key outside right
set grid
set datafile missing '?'
set yrange [0:*]
set logscale x 2
set xtics ('512' 512, '1k' 1024, '2k' 2048, '4k' 4096, '8k' 8192, '16k' 16384, '32k' 32768, '64k' 65536, '128k' 131072, '256k' 262144, '512k' 524288, '1m' 1048576)
plot for [i=2:9] 'rand-read.dat' using 1:i with linespoints lw 2 title columnheader(i)
