set terminal pngcairo size 900,560 noenhanced
set output 'seq-read.png'
set title 'Sequential read, QD 8: MiB/s against block size'
set xlabel 'block size'
set ylabel 'MiB/s'
set key outside right
set grid
set datafile missing '?'
set yrange [0:*]
set logscale x 2
set xtics ('4k' 4096, '8k' 8192, '16k' 16384, '32k' 32768, '64k' 65536, '128k' 131072, '256k' 262144, '512k' 524288, '1m' 1048576, '2m' 2097152)
plot for [i=2:9] 'seq-read.dat' using 1:i with linespoints lw 2 title columnheader(i)
